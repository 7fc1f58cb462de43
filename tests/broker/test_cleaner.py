"""Log compaction: latest value per key kept, offsets unchanged, producer state intact."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from broker.log.batch import HEADER_SIZE, iter_batches
from broker.log.ledger import FsyncLedger
from broker.log.log import Log
from tests.broker.test_log import open_log

NOW = 2_000_000_000_000


def keyed_batch(
    pairs: list[tuple[bytes, bytes | None]], pid: int = -1, seq: int = -1, txn: bool = False
) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, txn, pid, 0 if pid >= 0 else -1, seq, 1 << 20)
    for i, (key, value) in enumerate(pairs):
        builder.append(i, NOW - 1000, key, value, [])
    return bytes(builder.build())


def records(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every data record, segment by segment."""
    out = []
    for segment in log.segments:
        data = segment.read_at(0, segment.size)
        for pos, header in iter_batches(data):
            if not header.is_control:
                out += [
                    (r.offset, r.key, r.value)
                    for r in DefaultRecordBatch(data[pos : pos + header.size])
                ]
    return out


def compacted_log(tmp_path: Path, ledger: FsyncLedger, **overrides: object) -> Log:
    return open_log(tmp_path, ledger, cleanup_policy="compact", segment_bytes=400, **overrides)


def test_latest_value_per_key_survives_with_its_offset(tmp_path: Path) -> None:
    ledger = FsyncLedger(tmp_path)
    log = compacted_log(tmp_path, ledger)
    for i in range(40):
        log.append(bytearray(keyed_batch([(b"k%d" % (i % 4), b"v%02d" % i + b"." * 30)])), 0)
    before = records(log)
    stats = log.compact(NOW, upper=log.next_offset)
    assert log.compact(NOW, upper=log.next_offset).bytes_before == 0  # nothing new: no pass
    after = records(log)
    assert stats.segments > 0 and stats.records_removed > 0 and len(after) < len(before)
    assert set(after) <= set(before)
    assert [o for o, _, _ in after] == sorted(o for o, _, _ in after)
    latest = {k: (o, v) for o, k, v in before}
    assert all((o, k, v) in after for k, (o, v) in latest.items())
    bounds = [(s.base_offset, s.next_offset) for s in log.segments]
    assert all(a[1] == b[0] for a, b in pairwise(bounds))
    log.close()
    reopened = open_log(tmp_path, ledger, cleanup_policy="compact", segment_bytes=400)
    assert records(reopened) == after and reopened.next_offset == 40
    ledger.close()


def test_idempotent_producer_state_survives_compaction(tmp_path: Path) -> None:
    ledger = FsyncLedger(tmp_path)
    log = compacted_log(tmp_path, ledger)
    batches = [keyed_batch([(b"same", b"x" * 60)], pid=3, seq=i) for i in range(12)]
    for batch in batches:
        log.append(bytearray(batch), 0)
    log.compact(NOW, upper=log.next_offset)
    log.segments[-1].close()
    reopened = compacted_log(tmp_path, ledger)  # unclean: state rebuilt from the compacted log
    assert reopened.append(bytearray(batches[-1]), 0).duplicate
    assert (
        reopened.append(bytearray(keyed_batch([(b"same", b"y")], pid=3, seq=12)), 0).first_offset
        == 12
    )
    ledger.close()


def test_tombstones_expire_and_aborted_records_go(tmp_path: Path) -> None:
    ledger = FsyncLedger(tmp_path)
    log = compacted_log(tmp_path, ledger, delete_retention_ms=0)
    log.append(bytearray(keyed_batch([(b"gone", b"v" * 50)])), 0)
    log.append(bytearray(keyed_batch([(b"gone", None)])), 0)
    log.append(bytearray(keyed_batch([(b"t", b"aborted" * 5)], pid=8, seq=0, txn=True)), 0)
    log.append_marker(8, 0, commit=False, coordinator_epoch=0, leader_epoch=0)
    for i in range(10):
        log.append(bytearray(keyed_batch([(b"live", b"%d" % i + b"-" * 60)])), 0)
    log.compact(NOW, upper=log.next_offset)
    keys = [k for _, k, _ in records(log)]
    assert b"gone" not in keys and b"t" not in keys and b"live" in keys
    ledger.close()


@settings(max_examples=25, deadline=None)
@given(
    writes=st.lists(
        st.tuples(st.integers(0, 5), st.binary(min_size=1, max_size=40)), min_size=1, max_size=60
    )
)
def test_compaction_keeps_every_keys_last_value(
    tmp_path_factory, writes: list[tuple[int, bytes]]
) -> None:
    tmp_path = tmp_path_factory.mktemp("clean")
    ledger = FsyncLedger(tmp_path)
    log = open_log(tmp_path, ledger, cleanup_policy="compact", segment_bytes=200)
    for key, value in writes:
        log.append(bytearray(keyed_batch([(b"%d" % key, value)])), 0)
    log.roll()
    log.compact(NOW, upper=log.next_offset)
    after = records(log)
    expected = {b"%d" % k: v for k, v in writes}
    assert {k: v for _, k, v in after} == expected
    assert len({k for _, k, _ in after}) == len(after)  # everything was cleanable: one per key
    ledger.close()


def test_a_batch_that_would_inflate_too_far_is_kept_and_the_rest_cleaned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """max.message.bytes 1000 lets records inflate to 64,000 bytes: the zstd batch of
    1 MiB stays as it is (logged) instead of exhausting memory every pass."""
    ledger = FsyncLedger(tmp_path)
    log = compacted_log(tmp_path, ledger, max_message_bytes=1000)
    builder = DefaultRecordBatchBuilder(2, 4, False, -1, -1, -1, 1 << 21)
    builder.append(0, NOW - 1000, b"bomb", bytes(1 << 20), [])
    bomb = bytes(builder.build())
    log.append(bytearray(bomb), 0)
    for i in range(30):
        log.append(bytearray(keyed_batch([(b"k%d" % (i % 3), b"v" * 40)])), 0)
    stats = log.compact(NOW, upper=log.next_offset)
    assert stats.records_removed > 0
    assert bomb[HEADER_SIZE:] in log.segments[0].read_at(0, log.segments[0].size)
    assert "keeps batch at offset 0 as it is: records inflate past 64000 bytes" in caplog.text
    ledger.close()
