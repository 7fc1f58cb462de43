"""jepka's reference broker: a Kafka-compatible broker real clients talk to.

Decomposed as Kafka is: ``protocol``/``network`` (wire format and sockets), ``api``
(one handler module per API family, found through a registry), ``server``
(``ReplicaManager``, ``Partition``, purgatories, topic metadata) and ``log``
(segments, indexes, recovery, producer state). It imports nothing else from jepka.
"""
