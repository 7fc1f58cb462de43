"""The replication half of the Raft client: how the leader answers Fetch and
FetchSnapshot, and how a follower applies the answers to its log. Epoch checks and
timers stay in ``client``; these functions see only the log and the role's state."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from broker.raft import divergence
from broker.raft.entries import Snapshot
from broker.raft.messages import (
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
)
from broker.raft.protocols import ReplicatedLog
from broker.raft.quorum_state import FollowerState, LeaderState

MAX_ENTRIES_PER_FETCH = 4096


def serve_fetch(
    log: ReplicatedLog, leader: LeaderState, source: int, request: FetchRequest, now_ms: int
) -> FetchResponse:
    """Entries from the follower's position if its log matches ours up to there, else
    where it diverges, else (compacted away) our snapshot id."""
    leader.record_contact(source, now_ms)
    check = divergence.validate_fetch(log, request.fetch_offset, request.last_fetched_epoch)
    if check.kind is divergence.FetchPosition.SNAPSHOT:
        return FetchResponse(ErrorCode.none, *_ids(log, leader), snapshot_id=check.position)
    if check.kind is divergence.FetchPosition.DIVERGING:
        return FetchResponse(ErrorCode.none, *_ids(log, leader), diverging_epoch=check.position)
    leader.update_replica(source, request.fetch_offset, now_ms)  # may move the HW it is sent
    entries = log.read(request.fetch_offset, min(request.max_entries, MAX_ENTRIES_PER_FETCH))
    return FetchResponse(ErrorCode.none, *_ids(log, leader), records=tuple(entries))


def _ids(log: ReplicatedLog, leader: LeaderState) -> tuple[int, int, int | None, int]:
    """The leader, epoch, high watermark and log start offset every answer carries."""
    return leader.node_id, leader.epoch, leader.high_watermark, log.start_offset


def serve_fetch_snapshot(
    log: ReplicatedLog, request: FetchSnapshotRequest, leader_id: int, epoch: int
) -> FetchSnapshotResponse:
    snapshot = log.latest_snapshot()
    if snapshot is None or snapshot.snapshot_id != request.snapshot_id:
        return FetchSnapshotResponse(ErrorCode.snapshot_not_found, leader_id, epoch)
    size = len(snapshot.data)
    if request.position > size:
        return FetchSnapshotResponse(ErrorCode.position_out_of_range, leader_id, epoch)
    chunk = snapshot.data[request.position : request.position + request.max_bytes]
    return FetchSnapshotResponse(
        ErrorCode.none, leader_id, epoch, snapshot.snapshot_id, size, request.position, chunk
    )


def apply_fetch_response(
    log: ReplicatedLog, state: FollowerState, request: FetchRequest, response: FetchResponse
) -> bool:
    """Apply a successful Fetch answer; True when there may be more to fetch at once."""
    if request.fetch_offset != log.end_offset:
        return True  # our log moved since the request (a truncation): ask again
    if response.diverging_epoch is not None:
        cut = divergence.truncation_offset(log, response.diverging_epoch)
        if state.high_watermark is not None and cut < state.high_watermark:
            raise AssertionError(
                f"truncation to {cut} below the high watermark {state.high_watermark}"
            )
        log.truncate_to(cut)
        return True
    if response.snapshot_id is not None:
        state.snapshot_id, state.snapshot_buffer = response.snapshot_id, bytearray()
        return True
    if response.records:
        log.append_as_follower(list(response.records))
    state.update_high_watermark(response.high_watermark, log.end_offset)
    return bool(response.records)


def snapshot_chunk_fits(state: FollowerState, response: FetchSnapshotResponse) -> bool:
    """Is this a good chunk of the snapshot we are fetching (else start over)?"""
    return (
        response.error_code is ErrorCode.none
        and state.snapshot_id is not None
        and response.snapshot_id == state.snapshot_id
    )


def apply_snapshot_chunk(
    log: ReplicatedLog, state: FollowerState, response: FetchSnapshotResponse
) -> None:
    """Collect the chunk; once complete, replace the whole log with the snapshot."""
    if state.snapshot_id is None or response.position != len(state.snapshot_buffer):
        return
    state.snapshot_buffer.extend(response.chunk)
    if len(state.snapshot_buffer) < response.size:
        return
    snapshot = Snapshot(state.snapshot_id, bytes(state.snapshot_buffer))
    log.install_snapshot(snapshot)
    state.snapshot_id, state.snapshot_buffer = None, bytearray()
    state.update_high_watermark(snapshot.snapshot_id.offset, log.end_offset)
