"""The KRaft controller: one control manager per metadata domain (brokers,
replication, producer ids), driven by the active controller, the Raft leader."""
