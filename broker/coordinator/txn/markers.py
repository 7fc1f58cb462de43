"""Writing COMMIT/ABORT markers to every partition of a finished transaction.

Kafka's ``TransactionMarkerChannelManager`` sends WriteTxnMarkers to each
partition's current leader and retries until every partition has its marker;
only then may the coordinator write CompleteCommit/CompleteAbort. The
:class:`MarkerChannel` does the same: partitions this node leads are appended
locally (the leader check and the acks=all wait are the replica manager's),
the others go as one WriteTxnMarkers request per leader, looked up afresh on
every attempt so a retry follows a leader change. The WriteTxnMarkers handler
calls :func:`append_local`, so both paths apply markers identically.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from broker.coordinator.partitioning import GROUP_TOPIC
from broker.errors import ErrorCode, KafkaError

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
RETRY_BACKOFF_S = 0.1
#: a marker still failing after this many attempts is logged (then every
#: as many more): the transaction cannot complete until it lands
LOG_EVERY_ATTEMPTS = 50

# Partitions that will never take the marker: Kafka drops them (a newer
# producer epoch, a newer coordinator already there). A partition that does
# not exist in the cluster any more is dropped as well; one that exists but
# is unknown where the marker went (a broker still loading it) is retried.
_GIVE_UP = frozenset(
    {
        ErrorCode.invalid_producer_epoch,
        ErrorCode.producer_fenced,
        ErrorCode.transaction_coordinator_fenced,
    }
)


@dataclass(frozen=True, slots=True)
class TxnMarker:
    """What every partition of one finished transaction gets (Kafka's
    ``TxnMarkerEntry`` without its partitions, which shrink as retries succeed)."""

    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int


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
        offset once replicated, or raises ``KafkaError``."""
        ...


OffsetsMarkerHook = Callable[[int, int, int, bool], None]
"""``(offsets_partition, producer_id, producer_epoch, commit)``: a marker landed in
``__consumer_offsets``, so the group coordinator applies or drops pending offsets."""


RemoteWrite = Callable[
    [tuple[int, str, int], TxnMarker, list[TopicPartition]],
    Awaitable[dict[TopicPartition, ErrorCode]],
]
"""``(leader, marker, partitions)``: one WriteTxnMarkers to ``leader`` =
``(node_id, host, port)``; per-partition errors."""

LeaderOf = Callable[[str, int], "tuple[int, str, int] | None"]
Exists = Callable[[str, int], bool]
"""Whether a partition exists in the cluster (Kafka's metadata cache)."""


async def append_local(
    marker_log: MarkerLog,
    on_offsets_marker: OffsetsMarkerHook,
    marker: TxnMarker,
    partitions: Iterable[TopicPartition],
) -> dict[TopicPartition, ErrorCode]:
    """Appends to partitions led here, all at once (each waits for its ISR);
    returns each partition's error (``none`` = written and replicated)."""
    pid, epoch, commit = marker.producer_id, marker.producer_epoch, marker.commit

    async def one(tp: TopicPartition) -> ErrorCode:
        topic, partition = tp
        try:
            await marker_log.append_marker(
                topic, partition, pid, epoch, commit, marker.coordinator_epoch
            )
        except KafkaError as exc:
            return exc.code
        if topic == GROUP_TOPIC:
            on_offsets_marker(partition, pid, epoch, commit)
        return ErrorCode.none

    wanted = sorted(set(partitions))
    codes = await asyncio.gather(*(one(tp) for tp in wanted))
    return dict(zip(wanted, codes, strict=True))


class MarkerChannel:
    """Routes each partition's marker to its leader: here, or over the network."""

    def __init__(
        self,
        node_id: int,
        marker_log: MarkerLog,
        on_offsets_marker: OffsetsMarkerHook,
        exists: Exists,
        leader_of: LeaderOf | None = None,
        remote_write: RemoteWrite | None = None,
    ) -> None:
        self.node_id = node_id
        self.exists = exists
        self._log = marker_log
        self._on_offsets_marker = on_offsets_marker
        self._leader_of = leader_of  # None on a single node: everything is local
        self._remote_write = remote_write

    async def write(
        self, marker: TxnMarker, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, ErrorCode]:
        """One attempt per partition; returns each partition's error."""
        results: dict[TopicPartition, ErrorCode] = {}
        local: list[TopicPartition] = []
        remote: dict[tuple[int, str, int], list[TopicPartition]] = {}
        for tp in sorted(set(partitions)):
            leader = (self.node_id, "", 0) if self._leader_of is None else self._leader_of(*tp)
            if not self.exists(*tp):
                results[tp] = ErrorCode.unknown_topic_or_partition
            elif leader is None:
                results[tp] = ErrorCode.leader_not_available
            elif leader[0] == self.node_id:
                local.append(tp)
            else:
                remote.setdefault(leader, []).append(tp)
        attempts: list[Awaitable[dict[TopicPartition, ErrorCode]]] = [
            append_local(self._log, self._on_offsets_marker, marker, local)
        ]
        if self._remote_write is not None:
            attempts += [self._remote_write(leader, marker, tps) for leader, tps in remote.items()]
        for answer in await asyncio.gather(*attempts):
            results.update(answer)
        return results


async def write_markers_until_done(
    channel: MarkerChannel, marker: TxnMarker, partitions: Iterable[TopicPartition]
) -> None:
    """Retries the partitions whose marker failed retriably until none is left."""
    remaining = set(partitions)
    attempts = 0
    while remaining:
        results = await channel.write(marker, remaining)
        attempts += 1
        remaining = set()
        for tp, error in results.items():
            if error is ErrorCode.none:
                continue
            gone = error is ErrorCode.unknown_topic_or_partition and not channel.exists(*tp)
            if error in _GIVE_UP or gone:
                log.warning(
                    "dropping %s marker for pid %d on %s: %s",
                    "commit" if marker.commit else "abort", marker.producer_id, tp, error.name,
                )  # fmt: skip
                continue
            logged = log.info if attempts % LOG_EVERY_ATTEMPTS == 0 else log.debug
            logged(
                "marker for pid %d on %s: %s; retrying (attempt %d)",
                marker.producer_id, tp, error.name, attempts,
            )  # fmt: skip
            remaining.add(tp)
        if remaining:
            await asyncio.sleep(RETRY_BACKOFF_S)
