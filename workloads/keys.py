"""Abstract integer keys ↔ Kafka topic-partitions, one-to-one.

As in Jepsen's Kafka test, key ``k`` is partition ``k mod 2`` of topic
``jepka-t{k div 2}``: two partitions per topic, so both per-partition and
per-topic behaviour (e.g. transactions spanning partitions of one topic) get
exercised. The map is recorded in the run's ``test.json``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

TOPIC_PREFIX = "jepka-t"
PARTITIONS_PER_TOPIC = 2
_TOPIC = re.compile(rf"{re.escape(TOPIC_PREFIX)}(\d+)\Z")


def topic_partition(key: int) -> tuple[str, int]:
    return f"{TOPIC_PREFIX}{key // PARTITIONS_PER_TOPIC}", key % PARTITIONS_PER_TOPIC


def key_of(topic: str, partition: int) -> int:
    """The key of a topic-partition; ValueError for a topic not made by jepka."""
    m = _TOPIC.match(topic)
    if m is None or not 0 <= partition < PARTITIONS_PER_TOPIC:
        raise ValueError(f"{topic}[{partition}] is not a jepka key's topic-partition")
    return int(m.group(1)) * PARTITIONS_PER_TOPIC + partition


def topics(keys: Iterable[int]) -> list[str]:
    """The topics holding these keys, sorted."""
    return sorted({topic_partition(k)[0] for k in keys})


def all_keys(key_count: int) -> list[int]:
    """Keys 0..key_count-1, rounded up to whole topics."""
    n = -(-key_count // PARTITIONS_PER_TOPIC) * PARTITIONS_PER_TOPIC
    return list(range(n))


def key_map(key_count: int) -> dict[str, list[object]]:
    """``{key: [topic, partition]}`` for ``test.json``."""
    return {str(k): list(topic_partition(k)) for k in all_keys(key_count)}
