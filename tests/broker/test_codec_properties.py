"""Property tests for the batch and frame codecs."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch
from kio.schema.errors import ErrorCode
from kio.schema.response_header.v1.header import ResponseHeader
from kio.serial import entity_reader

from broker.log.batch import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    CRC_START,
    HEADER_SIZE,
    LOG_OVERHEAD,
    CorruptBatch,
    control_batch,
    control_type,
    decode_records,
    inflated,
    iter_batches,
    stamp,
)
from broker.log.producer_state import BatchMetadata, ProducerEntry
from broker.protocol.codec import build_response, encode_response, response_type
from tests.broker.batches import make_batch

values = st.lists(st.binary(max_size=200), min_size=1, max_size=20)
codecs = st.sampled_from([0, 1, 2, 3, 4])  # none, gzip, snappy, lz4, zstd


@settings(max_examples=60, deadline=None)
@given(values=values, codec=codecs, base=st.integers(0, 2**40), epoch=st.integers(0, 2**31 - 1))
def test_stamping_keeps_the_batch_valid_and_numbers_records(
    values: list[bytes], codec: int, base: int, epoch: int
) -> None:
    data = bytearray(make_batch(values, compression=codec))
    stamp(data, 0, base, epoch)
    [(pos, header)] = list(iter_batches(data))
    assert (pos, header.base_offset, header.leader_epoch) == (0, base, epoch)
    assert header.record_count == len(values) and header.last_offset == base + len(values) - 1
    records = list(DefaultRecordBatch(bytes(data)))
    assert [r.offset for r in records] == list(range(base, base + len(values)))
    assert [r.value for r in records] == values


@settings(max_examples=60, deadline=None, derandomize=True, database=None)  # wire-input fuzz
@given(values=values, codec=codecs, data=st.data())
def test_any_byte_flip_from_magic_on_is_detected(
    values: list[bytes], codec: int, data: st.DataObject
) -> None:
    batch = bytearray(make_batch(values, compression=codec))
    at = data.draw(st.integers(16, len(batch) - 1))
    batch[at] ^= data.draw(st.integers(1, 255))
    with pytest.raises(CorruptBatch):
        list(iter_batches(batch))


@settings(max_examples=60, deadline=None)
@given(values=values, codec=codecs)
def test_inflated_batches_read_as_kafka_record_reads_them(values: list[bytes], codec: int) -> None:
    batch = make_batch(values, compression=codec)
    assert [r.value for r in decode_records(batch, 1 << 20)] == values
    assert [r.value for r in DefaultRecordBatch(batch)] == values


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_a_compression_bomb_stops_at_the_limit(codec: int) -> None:
    """1 MiB of zeros compresses to 0.1-48 kB; it is refused after 64 KiB of output
    instead of inflated whole (zstd: 8 kB can hold 256 MB)."""
    bomb = make_batch([bytes(1 << 20)], compression=codec)
    with pytest.raises(CorruptBatch, match="inflate past 65536 bytes"):
        inflated(bomb, 1 << 16)
    assert len(inflated(bomb, 2 << 20)) > 1 << 20
    garbled = bytearray(bomb)
    garbled[HEADER_SIZE + 4 : HEADER_SIZE + 12] = b"\xff" * 8
    with pytest.raises(CorruptBatch):
        decode_records(bytes(garbled), 2 << 20)


@pytest.mark.parametrize("size", [-4, 0, 1 << 20])
def test_a_xerial_snappy_block_size_outside_the_data_is_corrupt(size: int) -> None:
    """A block size that is negative, empty or past the end is refused rather than
    read: a size of -4 would leave the reader where it was, forever."""
    stream = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + struct.pack(">i", size) + bytes(8)
    batch = bytearray(make_batch([b"v"]))
    batch[HEADER_SIZE:] = stream
    struct.pack_into(">i", batch, LOG_OVERHEAD - 4, len(batch) - LOG_OVERHEAD)
    struct.pack_into(">h", batch, CRC_START, 2)  # attributes: snappy
    with pytest.raises(CorruptBatch, match="do not decompress"):
        inflated(bytes(batch), 1 << 16)


@given(
    pid=st.integers(0, 2**62),
    epoch=st.integers(0, 2**15 - 1),
    commit=st.booleans(),
    coordinator_epoch=st.integers(0, 2**31 - 1),
)
def test_control_batches_round_trip(
    pid: int, epoch: int, commit: bool, coordinator_epoch: int
) -> None:
    data = control_batch(pid, epoch, commit, coordinator_epoch, 1_700_000_000_000)
    [(_, header)] = list(iter_batches(data))
    assert header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch) == (pid, epoch)
    assert control_type(bytes(data)) == (CONTROL_COMMIT if commit else CONTROL_ABORT)


@given(
    pid=st.integers(0, 2**62),
    epoch=st.integers(-1, 2**15 - 1),
    batches=st.lists(st.tuples(*[st.integers(0, 2**31 - 1)] * 5), max_size=5),
    txn=st.none() | st.integers(0, 2**40),
)
def test_producer_entries_survive_snapshot_encoding(
    pid: int, epoch: int, batches: list[tuple[int, ...]], txn: int | None
) -> None:
    entry = ProducerEntry(pid, epoch)
    entry.batches.extend(BatchMetadata(*b) for b in batches)
    entry.txn_first_offset = txn
    assert ProducerEntry.from_json(entry.to_json()) == entry


names = st.text(st.sampled_from("abcxyz._-0123456789"), min_size=1, max_size=30)


@settings(max_examples=40, deadline=None)
@given(
    version=st.integers(9, 12),
    topics=st.lists(st.tuples(names, st.integers(0, 5)), max_size=5),
    correlation=st.integers(-(2**31), 2**31 - 1),
)
def test_built_responses_decode_to_what_was_built(
    version: int, topics: list[tuple[str, int]], correlation: int
) -> None:
    data = {
        "throttle_time": 0,
        "brokers": [{"node_id": 1, "host": "h", "port": 9092, "rack": None}],
        "cluster_id": "c",
        "controller_id": 1,
        "topics": [
            {
                "error_code": ErrorCode.none,
                "name": name,
                "topic_id": uuid.uuid4(),
                "is_internal": False,
                "partitions": [
                    {
                        "error_code": ErrorCode.none,
                        "partition_index": i,
                        "leader_id": 1,
                        "replica_nodes": [1],
                    }
                    for i in range(count)
                ],
            }
            for name, count in topics
        ],
        "unknown_field_dropped": True,
    }
    response = build_response(3, version, data)
    frame = encode_response(3, correlation, response)
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    header, header_size = entity_reader(ResponseHeader)(frame, 4)
    decoded, _ = entity_reader(response_type(3, version))(frame, 4 + header_size)
    assert header.correlation_id == correlation and decoded == response
