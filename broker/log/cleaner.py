"""Log compaction for ``cleanup.policy=compact`` (Kafka's ``LogCleaner``, simplified).

One pass over a log's *cleanable* segments — every segment before the active
one that lies wholly below the high watermark and the first open
transaction — keeps, for each key, only its latest record there. Offsets
never change: a rewritten batch keeps its base offset, last offset delta,
producer id, epoch and base sequence, so consumers see sparse offsets and
idempotent producers keep their dedup state. Also dropped: records of
aborted transactions, and tombstones (null values) older than
``delete.retention.ms``. Kept as they are: control batches (markers), batches
whose records do not decode or would inflate past the log's limit (logged),
records without a key, the last batch of each producer (emptied if need be, as
Kafka does) and the last batch of each segment (so segments stay contiguous).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from crc32c import crc32c
from kafka.record.default_records import DefaultRecordBatchBuilder

from broker.log.batch import (
    CRC_START,
    HEADER_SIZE,
    BatchHeader,
    CorruptBatch,
    decode_records,
    stamp,
)
from broker.log.segment import LogSegment
from broker.log.txn_index import AbortedTxn

LAST_OFFSET_DELTA_AT = 23
log = logging.getLogger(__name__)


@dataclass
class CleanStats:
    segments: int = 0
    records_removed: int = 0
    bytes_before: int = 0
    bytes_after: int = 0


def _batches(segment: LogSegment) -> Iterable[tuple[BatchHeader, bytes]]:
    for pos, header in segment.iter_headers(0):
        yield header, segment.read_at(pos, header.size)


def _aborted(txns: list[AbortedTxn], producer_id: int, offset: int) -> bool:
    return any(
        t.producer_id == producer_id and t.first_offset <= offset <= t.last_offset for t in txns
    )


class Cleaner:
    def __init__(
        self,
        segments: list[LogSegment],
        aborted: list[AbortedTxn],
        now_ms: int,
        delete_retention_ms: int,
        inflate_limit: int,
    ):
        self.segments = segments
        self.inflate_limit = inflate_limit
        self.aborted = aborted
        self.tombstone_horizon = now_ms - delete_retention_ms
        self.latest: dict[bytes, int] = {}
        self.last_batch_of_producer: dict[int, int] = {}

    def build_map(self) -> None:
        """Latest offset of every key, and each producer's last batch, over the cleanable range."""
        for segment in self.segments:
            for header, data in _batches(segment):
                if header.has_producer_id:
                    self.last_batch_of_producer[header.producer_id] = header.base_offset
                for record in self._records(header, data) or ():
                    if record.key is not None:
                        self.latest[record.key] = record.offset

    def _records(self, header: BatchHeader, data: bytes) -> list[Any] | None:
        """A batch's records, or None for one kept as it is: a control batch, or one
        whose records do not decode or would inflate past the limit."""
        if header.is_control:
            return None
        try:
            return decode_records(data, self.inflate_limit)
        except CorruptBatch as e:
            log.warning("cleaner keeps batch at offset %d as it is: %s", header.base_offset, e)
            return None

    def _keep(self, header: BatchHeader, record, segment_max_ts: int) -> bool:
        if header.is_transactional and _aborted(self.aborted, header.producer_id, record.offset):
            return False
        if record.key is None:
            return True
        if self.latest.get(record.key) != record.offset:
            return False
        return record.value is not None or segment_max_ts >= self.tombstone_horizon

    def clean_segment(self, segment: LogSegment, stats: CleanStats) -> bytes | None:
        """The segment's new contents, or ``None`` if nothing would change."""
        out = bytearray()
        changed = False
        batches = list(_batches(segment))
        for i, (header, data) in enumerate(batches):
            records = self._records(header, data)
            if records is None:
                out += data
                continue
            kept = [r for r in records if self._keep(header, r, segment.max_timestamp)]
            if len(kept) == len(records):
                out += data
                continue
            changed = True
            stats.records_removed += len(records) - len(kept)
            must_retain = i == len(batches) - 1 or (
                header.has_producer_id
                and self.last_batch_of_producer.get(header.producer_id) == header.base_offset
            )
            if kept or must_retain:
                out += rebuild(header, kept)
        return bytes(out) if changed else None


def rebuild(header: BatchHeader, records: list) -> bytearray:
    """A batch holding ``records`` with the original batch's offsets and producer fields."""
    builder = DefaultRecordBatchBuilder(
        2,
        header.compression,
        header.is_transactional,
        header.producer_id,
        header.producer_epoch,
        header.base_sequence,
        2**31 - 1,
    )
    for record in records:
        builder.append(
            record.offset - header.base_offset,
            record.timestamp,
            record.key,
            record.value,
            record.headers,
        )
    data = builder.build()
    if not records:
        struct.pack_into(">qq", data, 27, header.first_timestamp, header.max_timestamp)
    struct.pack_into(">i", data, LAST_OFFSET_DELTA_AT, header.last_offset_delta)
    struct.pack_into(">I", data, CRC_START - 4, crc32c(memoryview(data)[CRC_START:]))
    stamp(data, 0, header.base_offset, header.leader_epoch)
    assert len(data) >= HEADER_SIZE
    return data
