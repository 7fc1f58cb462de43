"""Multi-node operation of the reference broker: the controller quorum on the wire,
metadata applied to the broker's partitions, and the cluster's lifecycle."""
