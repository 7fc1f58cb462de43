"""Abstract integer keys ↔ Kafka topic-partitions, one-to-one.

As in Jepsen's Kafka test, key ``k`` is partition ``k mod 2`` of topic
``<prefix>{k div 2}``: two partitions per topic, so both per-partition and
per-topic behaviour (e.g. transactions spanning partitions of one topic) get
exercised. The prefix is ``jepka-t`` on a cluster jepka starts (a new
cluster, and the reference broker places replicas by topic name, so a seed
gives the same placement); a run against an existing cluster gets a prefix
of its own, so it never meets an earlier run's records. The map of the keys
a run starts with is recorded in the run's ``test.json``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

DEFAULT_PREFIX = "jepka-t"
PARTITIONS_PER_TOPIC = 2


@dataclass(frozen=True)
class KeyMap:
    """The topic-partition of every key, for topics named ``<prefix>N``."""

    prefix: str = DEFAULT_PREFIX
    _pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_pattern", re.compile(rf"{re.escape(self.prefix)}(\d+)\Z"))

    def topic_partition(self, key: int) -> tuple[str, int]:
        return f"{self.prefix}{key // PARTITIONS_PER_TOPIC}", key % PARTITIONS_PER_TOPIC

    def key_of(self, topic: str, partition: int) -> int:
        """The key of a topic-partition; ValueError for a topic not of this map."""
        m = self._pattern.match(topic)
        if m is None or not 0 <= partition < PARTITIONS_PER_TOPIC:
            raise ValueError(f"{topic}[{partition}] is not a jepka key's topic-partition")
        return int(m.group(1)) * PARTITIONS_PER_TOPIC + partition

    def topics(self, keys: Iterable[int]) -> list[str]:
        """The topics holding these keys, sorted."""
        return sorted({self.topic_partition(k)[0] for k in keys})

    def key_map(self, key_count: int) -> dict[str, list[object]]:
        """``{key: [topic, partition]}`` for ``test.json``."""
        return {str(k): list(self.topic_partition(k)) for k in all_keys(key_count)}


def run_key_map(namespace: str) -> KeyMap:
    """The key map of a run whose topics, group and ids start with ``namespace``."""
    return KeyMap(f"{namespace}-t")


def all_keys(key_count: int) -> list[int]:
    """Keys 0..key_count-1, rounded up to whole topics."""
    n = -(-key_count // PARTITIONS_PER_TOPIC) * PARTITIONS_PER_TOPIC
    return list(range(n))


def sent_keys(mops: Iterable[Any]) -> list[int]:
    """The keys an op's micro-ops send to, in order."""
    return [int(m[1]) for m in mops if isinstance(m, list) and len(m) == 3 and m[0] == "send"]
