"""Writing COMMIT/ABORT markers to every partition of a finished transaction.

Kafka's ``TransactionMarkerChannelManager`` sends WriteTxnMarkers to each
partition leader and retries until every partition has its marker; only then
may the coordinator write CompleteCommit/CompleteAbort. On one node the
"channel" is a direct call into the local replica manager, with the same
retry loop and the same per-partition outcome; the WriteTxnMarkers API handler
calls :func:`write_markers` too, so both paths apply markers identically.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Protocol

from broker.coordinator.partitioning import GROUP_TOPIC
from broker.errors import ErrorCode, KafkaError

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
RETRY_BACKOFF_S = 0.1

# A partition that no longer exists will never take its marker: Kafka drops it.
_GIVE_UP = frozenset(
    {
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.invalid_producer_epoch,
        ErrorCode.producer_fenced,
    }
)


class MarkerLog(Protocol):
    async def append_marker(
        self,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
    ) -> int:
        """Appends one control batch to a partition this node leads; returns its
        offset or raises ``KafkaError``."""
        ...


OffsetsMarkerHook = Callable[[int, int, int, bool], None]
"""``(offsets_partition, producer_id, producer_epoch, commit)``: a marker landed in
``__consumer_offsets``, so the group coordinator applies or drops pending offsets."""


async def write_markers(
    marker_log: MarkerLog,
    on_offsets_marker: OffsetsMarkerHook,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int,
    partitions: Iterable[TopicPartition],
) -> dict[TopicPartition, ErrorCode]:
    """One attempt per partition; returns each partition's error (``none`` = written)."""
    results: dict[TopicPartition, ErrorCode] = {}
    for topic, partition in sorted(partitions):
        try:
            await marker_log.append_marker(
                topic, partition, producer_id, producer_epoch, commit, coordinator_epoch
            )
            error = ErrorCode.none
        except KafkaError as exc:
            error = exc.code
        if error is ErrorCode.none and topic == GROUP_TOPIC:
            on_offsets_marker(partition, producer_id, producer_epoch, commit)
        results[(topic, partition)] = error
    return results


async def write_markers_until_done(
    marker_log: MarkerLog,
    on_offsets_marker: OffsetsMarkerHook,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int,
    partitions: Iterable[TopicPartition],
) -> None:
    """Retries the partitions whose marker failed retriably until none is left."""
    remaining = set(partitions)
    while remaining:
        results = await write_markers(
            marker_log,
            on_offsets_marker,
            producer_id,
            producer_epoch,
            commit,
            coordinator_epoch,
            remaining,
        )
        remaining = set()
        for tp, error in results.items():
            if error is ErrorCode.none:
                continue
            if error in _GIVE_UP:
                log.warning(
                    "dropping %s marker for pid %d on %s: %s", commit, producer_id, tp, error.name
                )
                continue
            remaining.add(tp)
        if remaining:
            await asyncio.sleep(RETRY_BACKOFF_S)
