"""Record batches built the way producers build them (via kafka.record)."""

from __future__ import annotations

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder


def make_batch(
    values: list[bytes],
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    compression: int = 0,
    timestamp_ms: int = 1_700_000_000_000,
) -> bytes:
    builder = DefaultRecordBatchBuilder(
        2, compression, transactional, producer_id, producer_epoch, base_sequence, 1 << 20
    )
    for i, value in enumerate(values):
        builder.append(i, timestamp_ms + i, None, value, [])
    return bytes(builder.build())


def read_values(records: bytes) -> list[tuple[int, bytes]]:
    """``(offset, value)`` of every data record in a fetch response's records."""
    out = []
    pos = 0
    while pos + 12 <= len(records):
        size = int.from_bytes(records[pos + 8 : pos + 12], "big", signed=True) + 12
        batch = DefaultRecordBatch(records[pos : pos + size])
        if not batch.is_control_batch:
            out.extend((r.offset, r.value) for r in batch)
        pos += size
    return out
