"""Case finders for Jepsen's Kafka queue anomalies, one function per anomaly.

Each takes the shared :class:`checkers.spark.frames.Frames` and returns a
DataFrame with one row per anomaly instance.
"""
