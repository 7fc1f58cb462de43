"""jepka's reference broker: a Kafka-compatible broker real clients talk to.

Decomposed as Kafka is: ``protocol``/``network`` (wire format and sockets), ``api``
(one handler module per API family, listed in an explicit API table), ``server``
(``ReplicaManager``, ``Partition``, purgatories, topic metadata), ``log`` (segments,
indexes, recovery, producer state), ``coordinator`` (group and transactions),
``raft``/``controller``/``metadata`` (KRaft) and ``replication`` (a node of a
cluster). ``broker.broker.Broker`` builds every part explicitly. It imports nothing
else from jepka, and its modules import no cycle.
"""
