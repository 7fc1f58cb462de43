"""Jepsen's Kafka queue anomalies, one function per anomaly, each over one
key's log (:class:`checkers.queue.key_log.KeyLog`) and yielding one dict per
anomaly instance, defined beside its kind's record (:class:`checkers.kind.Kind`);
:mod:`checkers.queue.run` runs them on every key in Spark.
"""
