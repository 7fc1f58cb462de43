"""Durable partition logs: segments, sparse offset indexes, the aborted-transaction
index, producer state, recovery and retention (Kafka's ``kafka.log``)."""
