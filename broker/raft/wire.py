"""Raft messages as Kafka wire entities (kio's schemas), so the quorum can talk over
the broker's ordinary request/response connections.

Versions: Vote v2 (the first with ``pre_vote``), BeginQuorumEpoch v0, EndQuorumEpoch
v0, Fetch v12 (the first with ``diverging_epoch``, ``current_leader`` and
``snapshot_id``) and FetchSnapshot v0, each for partition 0 of ``__cluster_metadata``.
Log entries travel as record batches v2, one batch per run of entries with the same
epoch and kind; the epoch is the batch's partition leader epoch and leader-change
entries are control batches, as in Kafka. Framing (sizes, headers, correlation ids)
is the transport's job.
"""

from __future__ import annotations

import datetime
import struct
from itertools import groupby
from typing import Any

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder  # type: ignore[import-untyped]
from kafka.record.memory_records import MemoryRecords  # type: ignore[import-untyped]
from kafka.record.util import calc_crc32c  # type: ignore[import-untyped]
from kio.schema.begin_quorum_epoch.v0 import request as bqe_req
from kio.schema.begin_quorum_epoch.v0 import response as bqe_resp
from kio.schema.end_quorum_epoch.v0 import request as eqe_req
from kio.schema.end_quorum_epoch.v0 import response as eqe_resp
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import request as fetch_req
from kio.schema.fetch.v12 import response as fetch_resp
from kio.schema.fetch_snapshot.v0 import request as snap_req
from kio.schema.fetch_snapshot.v0 import response as snap_resp
from kio.schema.types import BrokerId, TopicName
from kio.schema.vote.v2 import request as vote_req
from kio.schema.vote.v2 import response as vote_resp
from kio.static.primitive import Records, i32, i32Timedelta, i64

from broker.raft import messages as m
from broker.raft.entries import EntryKind, LogEntry, OffsetAndEpoch

METADATA_TOPIC = TopicName("__cluster_metadata")
_P0 = i32(0)
_NO_TIME = i32Timedelta.parse(datetime.timedelta(0))


class WireError(ValueError):
    """A Raft message on the wire that does not fit the metadata partition."""


# -- record batches ----------------------------------------------------------------------
_LEADER_EPOCH = struct.Struct(">i")
_ATTRIBUTES = struct.Struct(">h")
_CRC = struct.Struct(">I")
_LEADER_CHANGE_KEY = struct.pack(">hh", 0, 2)  # control record version 0, type LEADER_CHANGE


def encode_entries(entries: list[LogEntry]) -> bytes:
    out = bytearray()
    for (epoch, kind), run in groupby(entries, key=lambda e: (e.epoch, e.kind)):
        batch = list(run)
        builder = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 30)
        key = _LEADER_CHANGE_KEY if kind is EntryKind.LEADER_CHANGE else None
        for delta, entry in enumerate(batch):
            builder.append(delta, 0, key, entry.data, [])
        raw = builder.build()
        struct.pack_into(">q", raw, 0, batch[0].offset)
        _LEADER_EPOCH.pack_into(raw, 12, epoch)  # outside the CRC, as brokers stamp it
        if kind is EntryKind.LEADER_CHANGE:
            attributes = _ATTRIBUTES.unpack_from(raw, DefaultRecordBatch.ATTRIBUTES_OFFSET)[0]
            control = attributes | DefaultRecordBatch.CONTROL_MASK
            _ATTRIBUTES.pack_into(raw, DefaultRecordBatch.ATTRIBUTES_OFFSET, control)
            crc = calc_crc32c(bytes(raw[DefaultRecordBatch.ATTRIBUTES_OFFSET :]))
            _CRC.pack_into(raw, DefaultRecordBatch.CRC_OFFSET, crc)
        out += raw
    return bytes(out)


def decode_entries(raw: bytes | None) -> tuple[LogEntry, ...]:
    entries: list[LogEntry] = []
    records = MemoryRecords(raw or b"")
    while (batch := records.next_batch()) is not None:
        if not batch.validate_crc():
            raise WireError(f"record batch at offset {batch.base_offset} fails its CRC")
        kind = EntryKind.LEADER_CHANGE if batch.is_control_batch else EntryKind.DATA
        for record in batch:
            entries.append(LogEntry(record.offset, batch.leader_epoch, record.value or b"", kind))
    return tuple(entries)


# -- helpers -----------------------------------------------------------------------------
def _leader(leader_id: int | None) -> BrokerId:
    return BrokerId(-1 if leader_id is None else leader_id)


def _leader_or_none(leader_id: int) -> int | None:
    return None if leader_id < 0 else leader_id


def _only(items: tuple[Any, ...], what: str) -> Any:
    if len(items) != 1:
        raise WireError(f"{what}: expected exactly one entry for the metadata partition")
    return items[0]


def _snapshot_id(sid: OffsetAndEpoch | None, cls: Any) -> Any:
    if sid is None:
        return cls(end_offset=i64(-1), epoch=i32(-1))
    return cls(end_offset=i64(sid.offset), epoch=i32(sid.epoch))


def _offset_and_epoch(obj: Any) -> OffsetAndEpoch | None:
    end, epoch = obj.end_offset, obj.epoch
    return None if end < 0 or epoch < 0 else OffsetAndEpoch(epoch, end)


# -- to the wire -------------------------------------------------------------------------
def _topics(module: Any, partition: Any) -> tuple[Any, ...]:
    return (module.TopicData(topic_name=METADATA_TOPIC, partitions=(partition,)),)


def _vote_request(body: m.VoteRequest) -> Any:
    part = vote_req.PartitionData(
        partition_index=_P0,
        replica_epoch=i32(body.candidate_epoch),
        replica_id=BrokerId(body.candidate_id),
        replica_directory_id=None,
        voter_directory_id=None,
        last_offset_epoch=i32(body.last_offset_epoch),
        last_offset=i64(body.last_offset),
        pre_vote=body.pre_vote,
    )
    return vote_req.VoteRequest(topics=_topics(vote_req, part))


def _vote_response(body: m.VoteResponse) -> Any:
    part = vote_resp.PartitionData(
        partition_index=_P0,
        error_code=body.error_code,
        leader_id=_leader(body.leader_id),
        leader_epoch=i32(body.leader_epoch),
        vote_granted=body.vote_granted,
    )
    return vote_resp.VoteResponse(error_code=ErrorCode.none, topics=_topics(vote_resp, part))


def _begin_request(body: m.BeginQuorumEpochRequest) -> Any:
    part = bqe_req.PartitionData(
        partition_index=_P0, leader_id=BrokerId(body.leader_id), leader_epoch=i32(body.leader_epoch)
    )
    return bqe_req.BeginQuorumEpochRequest(topics=_topics(bqe_req, part))


def _end_request(body: m.EndQuorumEpochRequest) -> Any:
    part = eqe_req.PartitionData(
        partition_index=_P0,
        leader_id=BrokerId(body.leader_id),
        leader_epoch=i32(body.leader_epoch),
        preferred_successors=tuple(i32(s) for s in body.preferred_successors),
    )
    return eqe_req.EndQuorumEpochRequest(topics=_topics(eqe_req, part))


def _epoch_response(body: m.BeginQuorumEpochResponse | m.EndQuorumEpochResponse) -> Any:
    begin = isinstance(body, m.BeginQuorumEpochResponse)
    module: Any = bqe_resp if begin else eqe_resp
    part = module.PartitionData(
        partition_index=_P0,
        error_code=body.error_code,
        leader_id=_leader(body.leader_id),
        leader_epoch=i32(body.leader_epoch),
    )
    cls = module.BeginQuorumEpochResponse if begin else module.EndQuorumEpochResponse
    return cls(error_code=ErrorCode.none, topics=_topics(module, part))


def _fetch_request(body: m.FetchRequest) -> Any:
    part = fetch_req.FetchPartition(
        partition=_P0,
        current_leader_epoch=i32(body.current_leader_epoch),
        fetch_offset=i64(body.fetch_offset),
        last_fetched_epoch=i32(body.last_fetched_epoch),
        partition_max_bytes=i32(body.max_entries),
    )
    return fetch_req.FetchRequest(
        replica_id=BrokerId(body.replica_id),
        max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=body.max_wait_ms)),
        min_bytes=i32(0),
        topics=(fetch_req.FetchTopic(topic=METADATA_TOPIC, partitions=(part,)),),
        forgotten_topics_data=(),
    )


def _fetch_response(body: m.FetchResponse) -> Any:
    diverging = body.diverging_epoch
    part = fetch_resp.PartitionData(
        partition_index=_P0,
        error_code=body.error_code,
        high_watermark=i64(-1 if body.high_watermark is None else body.high_watermark),
        log_start_offset=i64(body.log_start_offset),
        diverging_epoch=fetch_resp.EpochEndOffset(
            epoch=i32(diverging.epoch if diverging else -1),
            end_offset=i64(diverging.offset if diverging else -1),
        ),
        current_leader=fetch_resp.LeaderIdAndEpoch(
            leader_id=_leader(body.leader_id), leader_epoch=i32(body.leader_epoch)
        ),
        snapshot_id=_snapshot_id(body.snapshot_id, fetch_resp.SnapshotId),
        aborted_transactions=None,
        records=Records(encode_entries(list(body.records))),
    )
    topic = fetch_resp.FetchableTopicResponse(topic=METADATA_TOPIC, partitions=(part,))
    return fetch_resp.FetchResponse(
        throttle_time=_NO_TIME, error_code=ErrorCode.none, responses=(topic,)
    )


def _snapshot_request(body: m.FetchSnapshotRequest) -> Any:
    part = snap_req.PartitionSnapshot(
        partition=_P0,
        current_leader_epoch=i32(body.current_leader_epoch),
        snapshot_id=_snapshot_id(body.snapshot_id, snap_req.SnapshotId),
        position=i64(body.position),
    )
    return snap_req.FetchSnapshotRequest(
        replica_id=BrokerId(body.replica_id),
        max_bytes=i32(body.max_bytes),
        topics=(snap_req.TopicSnapshot(name=METADATA_TOPIC, partitions=(part,)),),
    )


def _snapshot_response(body: m.FetchSnapshotResponse) -> Any:
    part = snap_resp.PartitionSnapshot(
        index=_P0,
        error_code=body.error_code,
        snapshot_id=_snapshot_id(body.snapshot_id, snap_resp.SnapshotId),
        current_leader=snap_resp.LeaderIdAndEpoch(
            leader_id=_leader(body.leader_id), leader_epoch=i32(body.leader_epoch)
        ),
        size=i64(body.size),
        position=i64(body.position),
        unaligned_records=Records(body.chunk),
    )
    return snap_resp.FetchSnapshotResponse(
        throttle_time=_NO_TIME,
        error_code=ErrorCode.none,
        topics=(snap_resp.TopicSnapshot(name=METADATA_TOPIC, partitions=(part,)),),
    )


_TO_WIRE: dict[type, Any] = {
    m.VoteRequest: _vote_request,
    m.VoteResponse: _vote_response,
    m.BeginQuorumEpochRequest: _begin_request,
    m.BeginQuorumEpochResponse: _epoch_response,
    m.EndQuorumEpochRequest: _end_request,
    m.EndQuorumEpochResponse: _epoch_response,
    m.FetchRequest: _fetch_request,
    m.FetchResponse: _fetch_response,
    m.FetchSnapshotRequest: _snapshot_request,
    m.FetchSnapshotResponse: _snapshot_response,
}


def to_wire(body: m.RaftRequest | m.RaftResponse) -> Any:
    """The kio entity for a Raft message."""
    return _TO_WIRE[type(body)](body)


# -- from the wire -----------------------------------------------------------------------
def _partition(entity: Any, what: str) -> Any:
    topics = getattr(entity, "topics", None) or getattr(entity, "responses", None) or ()
    topic = _only(tuple(topics), what)
    name = getattr(topic, "topic_name", None) or getattr(topic, "topic", None) or topic.name
    if name != METADATA_TOPIC:
        raise WireError(f"{what}: topic {name!r} is not {METADATA_TOPIC}")
    return _only(tuple(topic.partitions), what)


def from_wire(entity: Any) -> m.RaftRequest | m.RaftResponse:
    """The Raft message for a kio entity of one of the five APIs."""
    what = type(entity).__name__
    p = _partition(entity, what)
    if isinstance(entity, vote_req.VoteRequest):
        return m.VoteRequest(
            p.replica_epoch, p.replica_id, p.last_offset_epoch, p.last_offset, p.pre_vote
        )
    if isinstance(entity, vote_resp.VoteResponse):
        return m.VoteResponse(
            p.error_code,
            _leader_or_none(p.leader_id),
            p.leader_epoch,
            p.vote_granted,
        )
    if isinstance(entity, bqe_req.BeginQuorumEpochRequest):
        return m.BeginQuorumEpochRequest(p.leader_id, p.leader_epoch)
    if isinstance(entity, bqe_resp.BeginQuorumEpochResponse):
        return m.BeginQuorumEpochResponse(
            p.error_code, _leader_or_none(p.leader_id), p.leader_epoch
        )
    if isinstance(entity, eqe_req.EndQuorumEpochRequest):
        return m.EndQuorumEpochRequest(
            p.leader_id, p.leader_epoch, tuple(p.preferred_successors or ())
        )
    if isinstance(entity, eqe_resp.EndQuorumEpochResponse):
        return m.EndQuorumEpochResponse(p.error_code, _leader_or_none(p.leader_id), p.leader_epoch)
    if isinstance(entity, fetch_req.FetchRequest):
        return m.FetchRequest(
            entity.replica_id,
            p.current_leader_epoch,
            p.fetch_offset,
            p.last_fetched_epoch,
            p.partition_max_bytes,
            entity.max_wait // datetime.timedelta(milliseconds=1),
        )
    if isinstance(entity, fetch_resp.FetchResponse):
        hw = p.high_watermark
        return m.FetchResponse(
            p.error_code,
            _leader_or_none(p.current_leader.leader_id),
            p.current_leader.leader_epoch,
            None if hw < 0 else hw,
            p.log_start_offset,
            _offset_and_epoch(p.diverging_epoch),
            _offset_and_epoch(p.snapshot_id),
            decode_entries(p.records),
        )
    if isinstance(entity, snap_req.FetchSnapshotRequest):
        sid = _offset_and_epoch(p.snapshot_id)
        if sid is None:
            raise WireError(f"{what}: no snapshot id")
        return m.FetchSnapshotRequest(
            entity.replica_id,
            p.current_leader_epoch,
            sid,
            p.position,
            entity.max_bytes,
        )
    if isinstance(entity, snap_resp.FetchSnapshotResponse):
        return m.FetchSnapshotResponse(
            p.error_code,
            _leader_or_none(p.current_leader.leader_id),
            p.current_leader.leader_epoch,
            _offset_and_epoch(p.snapshot_id),
            p.size,
            p.position,
            bytes(p.unaligned_records),
        )
    raise WireError(f"{what} is not a Raft message")
