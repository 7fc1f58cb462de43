"""Which internal partition (and so which coordinator) owns a key.

Kept in one place so that replication can move coordinators with the
leadership of these partitions without touching the coordinators themselves.
"""

from __future__ import annotations

import enum

GROUP_TOPIC = "__consumer_offsets"
TRANSACTION_TOPIC = "__transaction_state"
DEFAULT_GROUP_PARTITIONS = 50
DEFAULT_TRANSACTION_PARTITIONS = 50


class CoordinatorType(enum.IntEnum):
    """FindCoordinator's ``key_type``."""

    GROUP = 0
    TRANSACTION = 1

    @property
    def topic(self) -> str:
        return GROUP_TOPIC if self is CoordinatorType.GROUP else TRANSACTION_TOPIC


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (UTF-16 code units, 32-bit wrap-around), so a key
    lands on the same partition as it would in Apache Kafka."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(key: str, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(key.hashCode) % partitions`` (``abs`` maps MIN_VALUE to 0)."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions
