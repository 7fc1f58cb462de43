"""The broker's server core: topic metadata, partitions, the ReplicaManager and purgatories."""
