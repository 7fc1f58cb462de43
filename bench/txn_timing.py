"""Timing small transactions: the loop the coordinator and cluster benchmarks share.

Imported by the ``bench_*.py`` scripts (run as files, so this directory is on
their path); not a benchmark itself, hence not named ``bench_*``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from confluent_kafka import Producer

RECORD = b"v" * 100


def time_transactions(
    producer: Producer,
    topic: str,
    partitions: int,
    count: int,
    before_commit: Callable[[int], None] = lambda i: None,
) -> tuple[float, float, float]:
    """Runs ``count`` transactions of one record on each of ``partitions``, calling
    ``before_commit(i)`` inside the ``i``-th; returns transactions/s and commit
    latency p50, p99 in ms."""
    commits: list[float] = []
    start = time.perf_counter()
    for i in range(count):
        producer.begin_transaction()
        for partition in range(partitions):
            producer.produce(topic, RECORD, partition=partition)
        before_commit(i)
        committing = time.perf_counter()
        producer.commit_transaction(30)
        commits.append(time.perf_counter() - committing)
    rate = count / (time.perf_counter() - start)
    quantiles = statistics.quantiles(commits, n=100)
    return rate, quantiles[49] * 1000, quantiles[98] * 1000
