"""Cluster backends: where nodes live (namespaces, containers, SSH hosts)."""
