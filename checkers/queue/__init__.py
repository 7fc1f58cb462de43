"""Jepsen's Kafka queue anomalies, one function per anomaly, each over one
key's log (:class:`checkers.queue.key_log.KeyLog`) and yielding one dict per
anomaly instance; :mod:`checkers.queue.run` runs them on every key in Spark.
"""
