"""Group and transaction coordinators of the reference broker.

Each coordinator is a set of shards, one per partition of its internal topic
(``__consumer_offsets`` or ``__transaction_state``). A shard is rebuilt by
replaying its partition, and every state change is first written to that
partition, so a coordinator survives a restart and can later move with
partition leadership, as in Kafka.
"""
