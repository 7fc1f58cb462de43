"""Raft messages shaped after Kafka's Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch
(of the metadata partition) and FetchSnapshot, flattened to the one partition.

They are plain data so that the Raft logic stays independent of the codec: a wire
adapter maps them field for field onto kio's ``vote``, ``begin_quorum_epoch``,
``end_quorum_epoch``, ``fetch`` and ``fetch_snapshot`` schemas.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

if TYPE_CHECKING:
    from broker.raft.entries import LogEntry, OffsetAndEpoch


@dataclass(frozen=True, slots=True)
class VoteRequest:
    """With ``pre_vote`` (KIP-996) it asks whether the voter *would* vote for the
    candidate in ``candidate_epoch``; the voter answers without changing state."""

    candidate_epoch: int
    candidate_id: int
    last_offset_epoch: int
    last_offset: int
    pre_vote: bool = False


@dataclass(frozen=True, slots=True)
class VoteResponse:
    error_code: ErrorCode
    leader_id: int | None
    leader_epoch: int
    vote_granted: bool


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochRequest:
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochResponse:
    error_code: ErrorCode
    leader_id: int | None
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class EndQuorumEpochRequest:
    leader_id: int
    leader_epoch: int
    preferred_successors: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class EndQuorumEpochResponse:
    error_code: ErrorCode
    leader_id: int | None
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class FetchRequest:
    replica_id: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    max_entries: int = 512
    #: how long the leader may hold the fetch while it has nothing new to say
    max_wait_ms: int = 0


@dataclass(frozen=True, slots=True)
class FetchResponse:
    error_code: ErrorCode
    leader_id: int | None
    leader_epoch: int
    high_watermark: int | None = None
    log_start_offset: int = 0
    diverging_epoch: OffsetAndEpoch | None = None
    snapshot_id: OffsetAndEpoch | None = None
    records: tuple[LogEntry, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class FetchSnapshotRequest:
    replica_id: int
    current_leader_epoch: int
    snapshot_id: OffsetAndEpoch
    position: int
    max_bytes: int = 64 * 1024


@dataclass(frozen=True, slots=True)
class FetchSnapshotResponse:
    error_code: ErrorCode
    leader_id: int | None
    leader_epoch: int
    snapshot_id: OffsetAndEpoch | None = None
    size: int = 0
    position: int = 0
    chunk: bytes = b""


RaftRequest = (
    VoteRequest
    | BeginQuorumEpochRequest
    | EndQuorumEpochRequest
    | FetchRequest
    | FetchSnapshotRequest
)
RaftResponse = (
    VoteResponse
    | BeginQuorumEpochResponse
    | EndQuorumEpochResponse
    | FetchResponse
    | FetchSnapshotResponse
)
REQUEST_TYPES = (
    VoteRequest,
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchSnapshotRequest,
)


@dataclass(frozen=True, slots=True)
class Envelope:
    """One message in flight; a response echoes its request's correlation id."""

    source: int
    destination: int
    correlation_id: int
    body: RaftRequest | RaftResponse

    @property
    def is_request(self) -> bool:
        return isinstance(self.body, REQUEST_TYPES)
