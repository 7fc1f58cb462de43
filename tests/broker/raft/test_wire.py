"""Raft messages through kio's real serializers and back, byte for byte."""

from __future__ import annotations

import io
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.memory_records import MemoryRecords
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from broker.raft import messages as m
from broker.raft.entries import EntryKind, LogEntry, OffsetAndEpoch
from broker.raft.wire import WireError, decode_entries, encode_entries, from_wire, to_wire


def through_bytes(entity: Any) -> Any:
    buf = io.BytesIO()
    entity_writer(type(entity))(buf, entity)
    decoded, _ = entity_reader(type(entity))(buf.getvalue(), 0)
    return decoded


def entries_from(start: int, epochs: list[int], leader_change_at: set[int]) -> tuple[LogEntry, ...]:
    out = []
    for i, epoch in enumerate(epochs):
        kind = EntryKind.LEADER_CHANGE if i in leader_change_at else EntryKind.DATA
        data = b"" if kind is EntryKind.LEADER_CHANGE else b"record %d" % i
        out.append(LogEntry(start + i, epoch, data, kind))
    return tuple(out)


MESSAGES: list[m.RaftRequest | m.RaftResponse] = [
    m.VoteRequest(7, 2, 6, 120),
    m.VoteRequest(8, 3, 6, 120, pre_vote=True),
    m.VoteResponse(ErrorCode.none, None, 7, True),
    m.VoteResponse(ErrorCode.fenced_leader_epoch, 3, 9, False),
    m.BeginQuorumEpochRequest(2, 7),
    m.BeginQuorumEpochResponse(ErrorCode.none, 2, 7),
    m.EndQuorumEpochRequest(2, 7, (3, 1)),
    m.EndQuorumEpochResponse(ErrorCode.none, None, 8),
    m.FetchRequest(3, 7, 120, 6, 512),
    m.FetchRequest(3, 7, 120, 6, 512, max_wait_ms=500),
    m.FetchResponse(ErrorCode.none, 2, 7, 118, 40, None, None, entries_from(120, [7, 7, 7], {0})),
    m.FetchResponse(ErrorCode.none, 2, 7, None, 0, OffsetAndEpoch(5, 100)),
    m.FetchResponse(ErrorCode.none, 2, 7, 300, 250, None, OffsetAndEpoch(6, 250)),
    m.FetchResponse(ErrorCode.not_leader_or_follower, None, 7),
    m.FetchSnapshotRequest(3, 7, OffsetAndEpoch(6, 250), 65536, 65536),
    m.FetchSnapshotResponse(
        ErrorCode.none, 2, 7, OffsetAndEpoch(6, 250), 100_000, 65536, b"x" * 100
    ),
    m.FetchSnapshotResponse(ErrorCode.snapshot_not_found, 2, 7),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda msg: type(msg).__name__)
def test_every_message_survives_the_wire(message: m.RaftRequest | m.RaftResponse) -> None:
    assert from_wire(through_bytes(to_wire(message))) == message


@settings(max_examples=100, deadline=None, derandomize=True)
@given(
    start=st.integers(0, 2**40),
    steps=st.lists(st.integers(0, 2), min_size=1, max_size=30),
    controls=st.sets(st.integers(0, 29)),
)
def test_entries_round_trip_as_record_batches(
    start: int, steps: list[int], controls: set[int]
) -> None:
    epochs = [1 + sum(steps[: i + 1]) for i in range(len(steps))]
    entries = entries_from(start, epochs, controls)
    raw = encode_entries(list(entries))
    assert decode_entries(raw) == entries
    batches = MemoryRecords(raw)
    while (batch := batches.next_batch()) is not None:
        assert batch.validate_crc()  # real Kafka batches: any client library can read them


def test_damaged_batches_and_foreign_topics_are_refused() -> None:
    raw = bytearray(encode_entries(list(entries_from(0, [1, 1], set()))))
    raw[-1] ^= 0xFF
    with pytest.raises(WireError, match="fails its CRC"):
        decode_entries(bytes(raw))
    entity = to_wire(m.BeginQuorumEpochRequest(1, 1))
    topic = entity.topics[0]
    foreign = type(entity)(topics=(type(topic)(topic_name="orders", partitions=topic.partitions),))
    with pytest.raises(WireError, match="'orders' is not __cluster_metadata"):
        from_wire(foreign)
