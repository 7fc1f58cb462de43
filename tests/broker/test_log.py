"""Storage: appends, reads, rolling, retention, recovery and producer state."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from broker.config import TOPIC_KEYS
from broker.errors import ErrorCode, KafkaError
from broker.log.batch import iter_batches
from broker.log.ledger import FsyncLedger, read_ledger
from broker.log.log import Log
from tests.broker.batches import make_batch, read_values


def settings(**overrides: object) -> dict[str, object]:
    values = {name: key.default for name, key in TOPIC_KEYS.items()}
    values.update({k.replace("_", "."): v for k, v in overrides.items()})
    return values


def open_log(tmp_path: Path, ledger: FsyncLedger, clean: bool = False, **overrides: object) -> Log:
    return Log.open(tmp_path / "t-0", settings(**overrides), ledger, clean)


def values_of(log: Log, start: int = 0) -> list[tuple[int, bytes]]:
    """Everything from ``start``; like Kafka, one read stops at a segment's end."""
    out: list[tuple[int, bytes]] = []
    position = start
    while position < log.next_offset:
        data = log.read(position, 1 << 30, log.next_offset)
        out += read_values(data)
        position = max(position + 1, log.next_offset if not data else _end_offset(data))
    return out


def _end_offset(records: bytes) -> int:
    return max(h.next_offset for _, h in iter_batches(records))


def test_append_assigns_offsets_and_reads_back(tmp_path: Path, ledger: FsyncLedger) -> None:
    log = open_log(tmp_path, ledger)
    assert log.append(bytearray(make_batch([b"a", b"b"])), 0).first_offset == 0
    assert log.append(bytearray(make_batch([b"c"])), 0).first_offset == 2
    assert values_of(log) == [(0, b"a"), (1, b"b"), (2, b"c")]
    assert values_of(log, 2) == [(2, b"c")]
    with pytest.raises(KafkaError) as e:
        log.read(4, 100, 10)
    assert e.value.code == ErrorCode.offset_out_of_range


def test_a_read_at_the_log_end_searches_no_segment(
    tmp_path: Path, ledger: FsyncLedger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caught-up follower or consumer reads at the log end on every fetch: that
    read is empty at once, without scanning the batches after the last index entry."""
    log = open_log(tmp_path, ledger)
    for value in (b"a", b"b", b"c"):
        log.append(bytearray(make_batch([value])), 0)
    segment = log.segments[-1]
    monkeypatch.setattr(segment, "find", lambda offset: pytest.fail(f"searched for {offset}"))
    assert log.read(3, 1 << 20, 3) == b""
    assert log.read(3, 1 << 20, 10) == b""
    with pytest.raises(KafkaError) as e:
        log.read(4, 1 << 20, 10)
    assert e.value.code == ErrorCode.offset_out_of_range
    monkeypatch.undo()
    assert read_values(log.read(2, 1 << 20, 3)) == [(2, b"c")]


def test_corrupt_batch_is_refused(tmp_path: Path, ledger: FsyncLedger) -> None:
    log = open_log(tmp_path, ledger)
    data = bytearray(make_batch([b"x" * 50]))
    data[-3] ^= 0xFF
    with pytest.raises(KafkaError) as e:
        log.append(data, 0)
    assert e.value.code == ErrorCode.corrupt_message


def test_segments_roll_by_size_and_retention_drops_old_ones(
    tmp_path: Path, ledger: FsyncLedger
) -> None:
    log = open_log(tmp_path, ledger, segment_bytes=300, retention_bytes=700)
    for i in range(20):
        log.append(bytearray(make_batch([b"%03d" % i + b"x" * 60])), 0)
    names = sorted(p.name for p in (tmp_path / "t-0").glob("*.log"))
    assert len(names) > 4 and names[0] == "00000000000000000000.log"
    assert all(len(Path(n).stem) == 20 for n in names)
    deleted = log.apply_retention(now_ms=0, upper=log.next_offset)
    assert deleted > 0 and log.log_start_offset > 0
    assert log.size - log.segments[0].size < 700
    assert values_of(log, log.log_start_offset)[-1][1].startswith(b"019")


def test_time_retention_keeps_the_active_segment(tmp_path: Path, ledger: FsyncLedger) -> None:
    log = open_log(tmp_path, ledger, segment_bytes=200, retention_ms=1000)
    for _ in range(6):
        log.append(bytearray(make_batch([b"y" * 80], timestamp_ms=1_000)), 0)
    log.apply_retention(now_ms=1_000_000, upper=log.next_offset)
    assert len(log.segments) == 1 and log.log_start_offset == log.segments[-1].base_offset


def test_torn_tail_is_truncated_on_recovery(tmp_path: Path, ledger: FsyncLedger) -> None:
    log = open_log(tmp_path, ledger)
    for i in range(5):
        log.append(bytearray(make_batch([b"r%d" % i])), 0)
    path = log.segments[-1].path
    size = path.stat().st_size
    log.close()
    with open(path, "r+b") as f:
        f.truncate(size - 7)  # a torn write of the last batch
    recovered = open_log(tmp_path, ledger)
    assert [v for _, v in values_of(recovered)] == [b"r0", b"r1", b"r2", b"r3"]
    assert recovered.append(bytearray(make_batch([b"next"])), 0).first_offset == 4


def test_corrupt_index_is_rebuilt(tmp_path: Path, ledger: FsyncLedger) -> None:
    log = open_log(tmp_path, ledger, index_interval_bytes=100)
    for i in range(40):
        log.append(bytearray(make_batch([b"i%02d" % i + b"z" * 40])), 0)
    index_path = log.segments[0].index.path
    entries = len(log.segments[0].index.offsets)
    log.close()
    assert entries > 5
    index_path.write_bytes(b"\xff" * 13)
    recovered = open_log(tmp_path, ledger, clean=True, index_interval_bytes=100)
    assert len(recovered.segments[0].index.offsets) == entries
    assert values_of(recovered, 33)[0] == (33, b"i33" + b"z" * 40)


def test_power_loss_keeps_exactly_the_fsynced_prefix(tmp_path: Path, ledger: FsyncLedger) -> None:
    log = open_log(tmp_path, ledger, flush_messages=3, segment_bytes=400)
    for i in range(10):
        log.append(bytearray(make_batch([b"p%d" % i + b"-" * 60])), 0)
    synced = read_ledger(tmp_path)
    for path in (tmp_path / "t-0").iterdir():  # what the lose-unfsynced fault does
        rel = path.relative_to(tmp_path).as_posix()
        os.truncate(path, min(path.stat().st_size, synced.get(rel, 0)))
    recovered = open_log(tmp_path, ledger)
    assert [v[:2] for _, v in values_of(recovered)] == [b"p%d" % i for i in range(9)]


def test_producer_state_survives_restart(tmp_path: Path, ledger: FsyncLedger) -> None:
    log = open_log(tmp_path, ledger, segment_bytes=250)
    for seq in range(0, 10, 2):
        log.append(bytearray(make_batch([b"a" * 40, b"b" * 40], 7, 0, seq)), 0)
    log.segments[-1].close()  # a crash: no clean snapshot
    recovered = open_log(tmp_path, ledger)
    duplicate = recovered.append(bytearray(make_batch([b"a" * 40, b"b" * 40], 7, 0, 8)), 0)
    assert duplicate.duplicate and duplicate.first_offset == 8
    with pytest.raises(KafkaError) as e:
        recovered.append(bytearray(make_batch([b"c"], 7, 0, 11)), 0)
    assert e.value.code == ErrorCode.out_of_order_sequence_number


def test_markers_track_lso_and_aborted_index(tmp_path: Path, ledger: FsyncLedger) -> None:
    log = open_log(tmp_path, ledger)
    log.append(bytearray(make_batch([b"t1"], 5, 0, 0, transactional=True)), 0)
    log.append(bytearray(make_batch([b"plain"])), 0)
    assert log.producer_state.first_unstable_offset() == 0
    abort_at = log.append_marker(5, 0, commit=False, coordinator_epoch=3, leader_epoch=0)
    assert abort_at == 2 and log.producer_state.first_unstable_offset() is None
    [aborted] = log.aborted_transactions(0, log.next_offset)
    assert (aborted.producer_id, aborted.first_offset, aborted.last_offset) == (5, 0, 2)
    with pytest.raises(KafkaError) as e:
        log.append_marker(5, 0, commit=True, coordinator_epoch=2, leader_epoch=0)
    assert e.value.code == ErrorCode.transaction_coordinator_fenced
    log.close()
    reopened = open_log(tmp_path, ledger)  # unclean reopen rebuilds from the log
    assert [a.first_offset for a in reopened.aborted_transactions(0, 10)] == [0]
    assert values_of(reopened) == [(0, b"t1"), (1, b"plain")]


@pytest.mark.parametrize("clean", [True, False], ids=["snapshot", "replay"])
def test_an_open_transaction_holds_the_lso_across_a_restart_until_truncated(
    tmp_path: Path, ledger: FsyncLedger, clean: bool
) -> None:
    log = open_log(tmp_path, ledger)
    log.append(bytearray(make_batch([b"plain"])), 0)  # offset 0
    log.append(bytearray(make_batch([b"t"], 5, 0, 0, transactional=True)), 0)  # offset 1
    log.append(bytearray(make_batch([b"u"], 6, 0, 0, transactional=True)), 0)  # offset 2
    log.append_marker(5, 0, commit=True, coordinator_epoch=0, leader_epoch=0)  # offset 3
    assert log.producer_state.first_unsettled_offset(high_watermark=4) == 2
    if clean:
        log.close()
    else:
        log.segments[-1].close()  # a crash: no clean snapshot
    reopened = open_log(tmp_path, ledger, clean=clean)
    assert reopened.producer_state.first_unstable_offset() == 2
    reopened.truncate_to(2)  # without its commit marker, offset 1's transaction is open
    assert reopened.producer_state.first_unstable_offset() == 1
    reopened.truncate_to(1)
    assert reopened.producer_state.first_unsettled_offset(high_watermark=1) is None
    reopened.append(bytearray(make_batch([b"v"], 7, 0, 0, transactional=True)), 0)  # offset 1
    assert reopened.producer_state.first_unstable_offset() == 1
    reopened.truncate_fully_and_start_at(10)  # a follower behind its leader's log start
    assert reopened.producer_state.first_unstable_offset() is None


def test_idle_producers_expire_but_open_transactions_stay(
    tmp_path: Path, ledger: FsyncLedger
) -> None:
    log = open_log(tmp_path, ledger)
    log.append(bytearray(make_batch([b"a"], 1, 0, 0, timestamp_ms=1_000)), 0)
    log.append(bytearray(make_batch([b"b"], 2, 0, 0, transactional=True, timestamp_ms=1_000)), 0)
    assert log.producer_state.remove_expired(now_ms=10_000, max_idle_ms=5_000) == 1
    assert set(log.producer_state.producers) == {2}


def test_full_offset_index_rolls_the_segment(tmp_path: Path, ledger: FsyncLedger) -> None:
    log = open_log(tmp_path, ledger, index_interval_bytes=1, segment_index_bytes=40)
    for i in range(12):
        log.append(bytearray(make_batch([b"%d" % i])), 0)
    assert len(log.segments) >= 2
    assert all(len(s.index.offsets) <= 5 for s in log.segments)
    assert [v for _, v in values_of(log)] == [b"%d" % i for i in range(12)]


def test_segment_ms_rolls_an_old_segment(tmp_path: Path, ledger: FsyncLedger) -> None:
    log = open_log(tmp_path, ledger, segment_ms=1)
    log.append(bytearray(make_batch([b"old"])), 0)
    time.sleep(0.01)  # older than segment.ms
    log.append(bytearray(make_batch([b"new"])), 0)
    assert [s.base_offset for s in log.segments] == [0, 1]


def test_timestamp_lookup_inside_compressed_batches(tmp_path: Path, ledger: FsyncLedger) -> None:
    log = open_log(tmp_path, ledger)
    for codec in (1, 2, 3, 4):
        values = [b"c%d-%d" % (codec, i) for i in range(10)]
        log.append(bytearray(make_batch(values, compression=codec, timestamp_ms=codec * 1000)), 0)
    assert log.offset_for_timestamp(3005) == (25, 3005)
    assert log.offset_for_timestamp(5000) is None
    assert log.max_timestamp() == (39, 4009)


def test_truncate_to_rewinds_data_producer_state_and_aborts(
    tmp_path: Path, ledger: FsyncLedger
) -> None:
    log = open_log(tmp_path, ledger, segment_bytes=300)
    for seq in range(0, 8, 2):  # offsets 0..7 from producer 4
        log.append(bytearray(make_batch([b"a" * 40, b"b" * 40], 4, 0, seq)), 0)
    log.append(bytearray(make_batch([b"t"], 6, 0, 0, transactional=True)), 0)  # offset 8
    log.append_marker(6, 0, commit=False, coordinator_epoch=0, leader_epoch=0)  # offset 9
    assert len(log.segments) > 2 and log.aborted_transactions(0, 10)
    log.truncate_to(4)
    assert log.next_offset == 4 and [o for o, _ in values_of(log)] == [0, 1, 2, 3]
    assert log.aborted_transactions(0, 10) == []
    again = log.append(bytearray(make_batch([b"a" * 40, b"b" * 40], 4, 0, 4)), 0)
    assert (again.duplicate, again.first_offset) == (False, 4)  # seq 4 is new again
    assert log.append(bytearray(make_batch([b"a" * 40, b"b" * 40], 4, 0, 4)), 0).duplicate


@hypothesis_settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_recovery_from_any_cut_or_bit_rot_keeps_a_prefix(tmp_path_factory, data) -> None:
    tmp_path = tmp_path_factory.mktemp("cut")
    ledger = FsyncLedger(tmp_path)
    log = open_log(tmp_path, ledger, segment_bytes=500)
    written = [b"w%02d" % i + b"." * data.draw(st.integers(0, 80)) for i in range(15)]
    for value in written:
        log.append(bytearray(make_batch([value])), 0)
    log.close()
    files = sorted((tmp_path / "t-0").glob("*.log"))
    victim = data.draw(st.sampled_from(files))
    content = bytearray(victim.read_bytes())
    # base offsets lie outside the CRC (as in Kafka), so bit rot is modelled in
    # the checked bytes; torn writes (the cut) may end anywhere
    checked = [
        p + i for p, h in iter_batches(content) for i in range(8, h.size) if not 12 <= i < 16
    ]
    if checked and data.draw(st.booleans()):
        content[data.draw(st.sampled_from(checked))] ^= 0xFF
    victim.write_bytes(content[: data.draw(st.integers(0, len(content)))])
    recovered = open_log(tmp_path, ledger, segment_bytes=500)
    recovered_records = values_of(recovered)
    values = [v for _, v in recovered_records]
    assert values == written[: len(values)]
    assert [o for o, _ in recovered_records] == list(range(len(values)))
    assert recovered.append(bytearray(make_batch([b"new"])), 0).first_offset == len(values)
    ledger.close()


def test_a_batch_appended_after_a_truncation_is_read_whole(
    tmp_path: Path, ledger: FsyncLedger
) -> None:
    """A truncation to a batch start forgets that batch: the one appended in its
    place, of another size, is what a read from there returns. A rolled segment
    keeps no batches in memory."""
    log = open_log(tmp_path, ledger)
    for value in (b"a", b"b", b"c"):
        log.append(bytearray(make_batch([value])), 0)
    log.truncate_to(1)
    log.append(bytearray(make_batch([b"x", b"y", b"z"])), 0)
    whole = [(1, b"x"), (2, b"y"), (3, b"z")]
    assert read_values(log.read(1, 1, 4)) == whole  # one batch at least, and only whole
    assert read_values(log.read(2, 1 << 20, 4)) == whole
    log.roll()
    assert log.segments[0]._recent == []
    assert read_values(log.read(1, 1, 4)) == whole


@hypothesis_settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_reads_from_the_recent_batches_match_reads_from_the_file(tmp_path_factory, data) -> None:
    """A segment answers reads among its last appended batches from memory: after
    appends and truncations they give what the file gives, and what was written."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("broker.log.segment.RECENT_BATCHES", 3)
        _check_recent_reads(tmp_path_factory.mktemp("recent"), data)


def _check_recent_reads(tmp_path: Path, data: st.DataObject) -> None:
    ledger = FsyncLedger(tmp_path)
    log = open_log(tmp_path, ledger, segment_bytes=2000, index_interval_bytes=150)
    written: list[bytes] = []
    batch_starts: list[int] = []
    for step in range(data.draw(st.integers(1, 25))):
        if batch_starts and data.draw(st.integers(0, 4)) == 0:
            cut = data.draw(st.sampled_from(batch_starts))
            log.truncate_to(cut)
            del written[cut:]
            batch_starts = [o for o in batch_starts if o < cut]
        else:
            values = [b"s%02d.%d" % (step, i) for i in range(data.draw(st.integers(1, 3)))]
            batch_starts.append(log.append(bytearray(make_batch(values)), 0).first_offset)
            written += values
        if written and data.draw(st.booleans()):
            start = data.draw(st.integers(0, len(written) - 1))
            max_bytes = data.draw(st.sampled_from([1, 200, 1 << 20]))
            upper = data.draw(st.integers(start + 1, len(written)))
            segment = log.segments[log._segment_index(start)]
            from_memory = log.read(start, max_bytes, upper)
            kept, segment._recent = segment._recent, []
            from_file = log.read(start, max_bytes, upper)
            segment._recent = kept
            assert from_memory == from_file
            got = read_values(from_memory)
            assert got and got[0][0] <= start
            assert all(written[o] == v for o, v in got)
    assert [v for _, v in values_of(log)] == written
    ledger.close()
