"""Record batch v2 headers: the only part of a batch the broker must understand.

The broker stores batches exactly as clients sent them (compressed or not);
assigning offsets only rewrites the base offset and partition leader epoch,
which lie outside the CRC. Records themselves are decoded only where Kafka
does too: control records (transaction markers), timestamp lookups and the
cleaner, through ``kafka.record``. A client's compressed records are inflated
first by ``inflated``, which stops at a limit: 8 KB of zstd can hold 256 MB of
zeros, and kafka.record would inflate any amount into memory.
"""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import lz4.frame
import snappy
import zstandard
from crc32c import crc32c
from kafka.codec import _detect_xerial_stream
from kafka.errors import CorruptRecordError
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # base offset + length: what precedes the "length" bytes
CRC_START = 21  # the CRC covers attributes onwards
PARTITION_LEADER_EPOCH_AT = 12
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
NO_PRODUCER_ID = -1
NO_SEQUENCE = -1
INT32_MAX = 2**31 - 1

CONTROL_ABORT = 0
CONTROL_COMMIT = 1
# how many times its max.message.bytes a batch's records may inflate to when the broker
# decodes them (64 MiB at the default 1 MB)
INFLATE_FACTOR = 64


class CorruptBatch(ValueError):
    """Bytes that are not a valid v2 record batch."""


@dataclass(frozen=True, slots=True)
class BatchHeader:
    base_offset: int
    length: int
    leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    first_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size(self) -> int:
        return self.length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) % (INT32_MAX + 1)


def parse_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptBatch(f"batch header truncated at byte {pos}")
    return BatchHeader(*HEADER.unpack_from(buf, pos))


def check_batch(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> None:
    """Validates magic, sizes and CRC of the batch at ``pos``; raises ``CorruptBatch``."""
    if header.magic != 2:
        raise CorruptBatch(f"unsupported record batch magic {header.magic} at byte {pos}")
    if header.length < MIN_BATCH_LENGTH:
        raise CorruptBatch(f"record batch length {header.length} too small at byte {pos}")
    end = pos + header.size
    if end > len(buf):
        raise CorruptBatch(f"record batch at byte {pos} runs past the end ({end} > {len(buf)})")
    if header.last_offset_delta < 0 or header.record_count < 0:
        raise CorruptBatch(f"negative record count or offset delta at byte {pos}")
    if crc32c(memoryview(buf)[pos + CRC_START : end]) != header.crc:
        raise CorruptBatch(f"record batch CRC mismatch at byte {pos}")


def iter_batches(buf: bytes | bytearray | memoryview) -> Iterator[tuple[int, BatchHeader]]:
    """Yields ``(position, header)`` of each valid batch; raises ``CorruptBatch`` at the
    first bad one, so callers decide whether that is a torn tail or a bad request."""
    pos = 0
    while pos < len(buf):
        header = parse_header(buf, pos)
        check_batch(buf, pos, header)
        yield pos, header
        pos += header.size


def stamp(buf: bytearray, pos: int, base_offset: int, leader_epoch: int) -> None:
    """Assigns a batch its offsets and leader epoch in place (outside the CRC)."""
    struct.pack_into(">q", buf, pos, base_offset)
    struct.pack_into(">i", buf, pos + PARTITION_LEADER_EPOCH_AT, leader_epoch)


def control_batch(
    producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int, timestamp_ms: int
) -> bytearray:
    """A transaction marker: one control record, key (version 0, type), value
    (version 0, coordinator epoch), as Kafka's ``EndTransactionMarker`` writes it."""
    builder = DefaultRecordBatchBuilder(2, 0, True, producer_id, producer_epoch, NO_SEQUENCE, 2**20)
    key = struct.pack(">hh", 0, CONTROL_COMMIT if commit else CONTROL_ABORT)
    value = struct.pack(">hi", 0, coordinator_epoch)
    builder.append(0, timestamp_ms, key, value, [])
    buf = builder.build()
    attributes = struct.unpack_from(">h", buf, CRC_START)[0] | CONTROL_MASK
    struct.pack_into(">h", buf, CRC_START, attributes)
    struct.pack_into(">I", buf, CRC_START - 4, crc32c(memoryview(buf)[CRC_START:]))
    return buf


def control_type(batch: bytes) -> int:
    """The marker type (``CONTROL_COMMIT``/``CONTROL_ABORT``) of a control batch."""
    return control_record(batch)[0]


def control_record(batch: bytes) -> tuple[int, int]:
    """``(marker type, coordinator epoch)`` of a control batch (-1: no epoch given)."""
    for record in DefaultRecordBatch(bytes(batch)):
        key, value = record.key, record.value
        if key is None or len(key) < 4:
            raise CorruptBatch("control record without a valid key")
        epoch = struct.unpack_from(">hi", value)[1] if value is not None and len(value) >= 6 else -1
        return struct.unpack_from(">hh", key)[1], epoch
    raise CorruptBatch("control batch without records")


def first_offset_at_or_after(
    batch: bytes, timestamp_ms: int, limit: int, start: int = 0
) -> tuple[int, int] | None:
    """``(offset, timestamp)`` of the batch's first record at or after offset
    ``start`` (the log start) stamped at or after ``timestamp_ms``, decoding the
    records (inflated up to ``limit`` bytes)."""
    for record in decode_records(batch, limit):
        if record.offset >= start and record.timestamp >= timestamp_ms:
            return record.offset, record.timestamp
    return None


def decode_records(batch: bytes, limit: int) -> list[Any]:
    """The batch's records as kafka.record decodes them, inflated up to ``limit`` bytes;
    raises ``CorruptBatch`` for records that do not decode."""
    try:
        return list(DefaultRecordBatch(inflated(batch, limit)))
    except CorruptRecordError as e:
        raise CorruptBatch(f"records do not decode: {e}") from None


# -- inflating a client's compressed records, up to a limit ---------------------------------
def inflated(batch: bytes, limit: int) -> bytes:
    """``batch`` with its records decompressed and the codec bits cleared, for reading
    with kafka.record (the CRC no longer holds); raises ``CorruptBatch`` if the records
    would inflate past ``limit`` bytes or do not decompress."""
    header = parse_header(batch)
    if not header.compression:
        return batch
    inflate = _INFLATERS.get(header.compression)
    if inflate is None:
        raise CorruptBatch(f"unknown compression codec {header.compression}")
    try:
        records = inflate(bytes(batch[HEADER_SIZE : header.size]), limit)
    except CorruptBatch:
        raise
    except _CODEC_ERRORS as e:
        raise CorruptBatch(f"records do not decompress: {type(e).__name__}: {e}") from None
    if len(records) > limit:  # each inflater stops one byte past the limit
        raise _inflate_past(limit)
    out = bytearray(batch[:HEADER_SIZE]) + records
    struct.pack_into(">h", out, CRC_START, header.attributes & ~COMPRESSION_MASK)
    struct.pack_into(">i", out, LOG_OVERHEAD - 4, len(out) - LOG_OVERHEAD)
    return bytes(out)


def _inflate_past(limit: int) -> CorruptBatch:
    return CorruptBatch(f"records inflate past {limit} bytes")


def _gunzip(data: bytes, limit: int) -> bytes:
    out = bytearray()
    while data and len(out) <= limit:  # concatenated members, as GzipFile reads them
        member = zlib.decompressobj(wbits=31)
        out += member.decompress(data, limit + 1 - len(out))
        if not member.eof and len(out) <= limit:
            raise ValueError("truncated gzip member")
        data = member.unused_data
    return bytes(out)


def _unsnappy(data: bytes, limit: int) -> bytes:
    """Raw snappy, or xerial's blocks of it; each declares its length up front."""
    blocks = [data]
    if _detect_xerial_stream(data):
        blocks, pos = [], 16
        while pos < len(data):
            (size,) = struct.unpack_from(">i", data, pos)
            if size <= 0 or pos + 4 + size > len(data):
                raise ValueError(f"xerial block of {size} bytes at {pos} of {len(data)}")
            blocks.append(data[pos + 4 : pos + 4 + size])
            pos += 4 + size
    if sum(_snappy_length(block) for block in blocks) > limit:
        raise _inflate_past(limit)
    return b"".join(snappy.decompress(block) for block in blocks)


def _snappy_length(block: bytes) -> int:
    """The uncompressed length a raw snappy block starts with (a little-endian varint)."""
    length = 0
    for i, byte in enumerate(block[:5]):
        length |= (byte & 0x7F) << (7 * i)
        if byte < 0x80:
            return length
    raise ValueError("bad snappy length")


def _unlz4(data: bytes, limit: int) -> bytes:
    frame = lz4.frame.LZ4FrameDecompressor()
    out = frame.decompress(data, max_length=limit + 1)
    if not frame.eof and len(out) <= limit:
        raise ValueError("truncated lz4 frame")
    return out


def _unzstd(data: bytes, limit: int) -> bytes:
    with zstandard.ZstdDecompressor().stream_reader(
        io.BytesIO(data), read_across_frames=True
    ) as reader:
        out = bytearray()
        while len(out) <= limit and (chunk := reader.read(limit + 1 - len(out))):
            out += chunk
    return bytes(out)


_CODEC_ERRORS = (
    zlib.error,
    struct.error,
    RuntimeError,  # lz4
    ValueError,
    zstandard.ZstdError,
    snappy.UncompressError,
)
_INFLATERS: dict[int, Callable[[bytes, int], bytes]] = {
    1: _gunzip,
    2: _unsnappy,
    3: _unlz4,
    4: _unzstd,
}
