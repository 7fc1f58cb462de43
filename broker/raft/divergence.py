"""Log reconciliation between a leader and a fetching follower (KIP-595, as KIP-101
does it for data partitions): the leader checks the follower's (fetch offset, last
fetched epoch) against its own log, and the follower truncates to where they agree.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from broker.raft.entries import OffsetAndEpoch
from broker.raft.protocols import ReplicatedLog


class FetchPosition(enum.Enum):
    VALID = "valid"
    DIVERGING = "diverging"
    SNAPSHOT = "snapshot"


@dataclass(frozen=True, slots=True)
class Validation:
    kind: FetchPosition
    position: OffsetAndEpoch | None = None


def validate_fetch(log: ReplicatedLog, fetch_offset: int, last_fetched_epoch: int) -> Validation:
    """Leader side: is the follower's log a prefix of ours up to ``fetch_offset``?

    DIVERGING carries our end offset for the largest epoch <= the follower's; SNAPSHOT
    means the comparison point has been compacted away, so the follower must load our
    latest snapshot instead."""
    if fetch_offset == 0 and log.start_offset == 0:
        return Validation(FetchPosition.VALID)
    snapshot = log.latest_snapshot()
    if snapshot is not None and log.start_offset > 0:
        sid = snapshot.snapshot_id
        if (
            fetch_offset < log.start_offset
            or (fetch_offset == log.start_offset and last_fetched_epoch != sid.epoch)
            or last_fetched_epoch < sid.epoch
        ):
            return Validation(FetchPosition.SNAPSHOT, sid)
    end = log.end_offset_for_epoch(last_fetched_epoch)
    if end.epoch != last_fetched_epoch or end.offset < fetch_offset:
        return Validation(FetchPosition.DIVERGING, end)
    return Validation(FetchPosition.VALID)


def truncation_offset(log: ReplicatedLog, diverging: OffsetAndEpoch) -> int:
    """Follower side: where to cut our log given the leader's diverging epoch."""
    if diverging.epoch == 0:
        return min(diverging.offset, log.end_offset)
    local = log.end_offset_for_epoch(diverging.epoch)
    if local.epoch == diverging.epoch:
        return min(local.offset, diverging.offset)
    return local.offset
