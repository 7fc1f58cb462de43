"""Cluster metadata as records, immutable images and deltas, and the loader that
follows the committed metadata log and publishes each new image to the broker."""
