"""The file-backed metadata log: durability across reopen, torn-tail recovery,
corruption reports, truncation, snapshots and prefix deletion."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.raft.entries import EntryKind, LogEntry, OffsetAndEpoch, Snapshot
from broker.raft.file_log import FileLog
from broker.raft.file_quorum_store import FileQuorumStateStore, QuorumStateCorruptError
from broker.raft.memory_log import MemoryLog
from broker.raft.protocols import ElectionState, LogCorruptError


def filled(path: Path, epochs: list[int], segment_bytes: int = 200) -> FileLog:
    log = FileLog(path, segment_bytes)
    for i, epoch in enumerate(epochs):
        log.append_as_leader([f"r{i}".encode()], epoch, EntryKind.DATA)
    return log


def contents(log: MemoryLog) -> list[tuple[int, int, bytes]]:
    return [(e.offset, e.epoch, e.data) for e in log.read(log.start_offset, 10**6)]


def test_entries_survive_reopen_across_segments(tmp_path: Path) -> None:
    log = filled(tmp_path, [1] * 10 + [2] * 10)
    assert len(list(tmp_path.glob("*.log"))) > 2
    again = FileLog(tmp_path, 200)
    assert contents(again) == contents(log)
    assert again.end_offset_and_epoch() == OffsetAndEpoch(2, 20)


def test_torn_tail_is_truncated_and_log_stays_usable(tmp_path: Path) -> None:
    filled(tmp_path, [1] * 5, segment_bytes=1 << 20)
    segment = next(tmp_path.glob("*.log"))
    size = segment.stat().st_size
    with open(segment, "ab") as f:
        f.write(b"\x00\x00\x00\x40\x12\x34")  # a frame header whose body never arrived
    again = FileLog(tmp_path)
    assert again.end_offset == 5
    assert segment.stat().st_size == size
    again.append_as_leader([b"next"], 1, EntryKind.DATA)
    assert contents(FileLog(tmp_path))[-1] == (5, 1, b"next")


def test_half_written_last_entry_is_dropped(tmp_path: Path) -> None:
    filled(tmp_path, [1] * 5, segment_bytes=1 << 20)
    segment = next(tmp_path.glob("*.log"))
    with open(segment, "r+b") as f:
        f.truncate(segment.stat().st_size - 3)
    assert FileLog(tmp_path).end_offset == 4


def test_damage_before_the_tail_is_reported_with_file_and_position(tmp_path: Path) -> None:
    filled(tmp_path, [1] * 20)
    first = sorted(tmp_path.glob("*.log"))[0]
    raw = bytearray(first.read_bytes())
    raw[20] ^= 0xFF
    first.write_bytes(bytes(raw))
    with pytest.raises(LogCorruptError, match=rf"{first.name}: damaged entry at byte 0"):
        FileLog(tmp_path, 200)


def test_truncate_to_removes_later_segments(tmp_path: Path) -> None:
    log = filled(tmp_path, [1] * 10 + [2] * 10)
    log.truncate_to(7)
    assert log.end_offset == 7
    again = FileLog(tmp_path, 200)
    assert contents(again) == contents(log)
    again.append_as_leader([b"x"], 3, EntryKind.DATA)
    assert FileLog(tmp_path, 200).end_offset_and_epoch() == OffsetAndEpoch(3, 8)


def test_end_offset_for_epoch(tmp_path: Path) -> None:
    log = filled(tmp_path, [1, 1, 3, 3, 3, 6])
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(1, 2)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(1, 2)
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(3, 5)
    assert log.end_offset_for_epoch(9) == OffsetAndEpoch(6, 6)
    assert log.end_offset_for_epoch(0) == OffsetAndEpoch(0, 0)


def test_snapshot_deletes_prefix_and_survives_reopen(tmp_path: Path) -> None:
    log = filled(tmp_path, [1] * 10 + [2] * 10)
    segments_before = len(list(tmp_path.glob("*.log")))
    log.create_snapshot(Snapshot(OffsetAndEpoch(2, 15), b"state@15"))
    log.delete_before_snapshot()
    assert log.start_offset == 15
    assert len(list(tmp_path.glob("*.log"))) < segments_before
    again = FileLog(tmp_path, 200)
    assert again.start_offset == 15 and again.end_offset == 20
    assert again.latest_snapshot() == Snapshot(OffsetAndEpoch(2, 15), b"state@15")
    assert contents(again) == contents(log)
    assert again.end_offset_for_epoch(2) == OffsetAndEpoch(2, 20)
    assert again.end_offset_for_epoch(1) == OffsetAndEpoch(0, 15)  # compacted away
    with pytest.raises(ValueError, match="below the log start"):
        again.truncate_to(10)


def test_snapshot_must_match_the_entry_before_it(tmp_path: Path) -> None:
    log = filled(tmp_path, [1] * 5)
    with pytest.raises(ValueError, match="does not match"):
        log.create_snapshot(Snapshot(OffsetAndEpoch(2, 3), b""))


def test_install_snapshot_replaces_the_whole_log(tmp_path: Path) -> None:
    log = filled(tmp_path, [1] * 10)
    log.install_snapshot(Snapshot(OffsetAndEpoch(4, 30), b"leader state"))
    assert (log.start_offset, log.end_offset, log.last_fetched_epoch()) == (30, 30, 4)
    log.append_as_follower([LogEntry(30, 4, b"a")])
    again = FileLog(tmp_path)
    assert (again.start_offset, again.end_offset) == (30, 31)
    assert again.latest_snapshot() is not None


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    ops=st.lists(
        st.one_of(
            st.tuples(st.just("append"), st.integers(1, 5), st.integers(0, 3)),
            st.tuples(st.just("truncate"), st.integers(0, 40), st.just(0)),
            st.tuples(st.just("snapshot"), st.integers(0, 40), st.just(0)),
        ),
        max_size=25,
    )
)
def test_reopened_file_log_equals_the_log_in_memory(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int, int]]
) -> None:
    """Any sequence of appends, truncations and snapshots reads back identically."""
    path = tmp_path_factory.mktemp("log")
    log = FileLog(path, segment_bytes=120)
    epoch = 1
    for op, a, b in ops:
        if op == "append":
            epoch += b
            log.append_as_leader([bytes([i]) * i for i in range(a)], epoch, EntryKind.DATA)
        elif op == "truncate" and a >= log.start_offset:
            log.truncate_to(a)
        elif op == "snapshot" and log.start_offset < a <= log.end_offset:
            snap_epoch = log.read(a - 1, 1)[0].epoch
            log.create_snapshot(Snapshot(OffsetAndEpoch(snap_epoch, a), b"s%d" % a))
            log.delete_before_snapshot()
        epoch = max(epoch, log.last_fetched_epoch())
    again = FileLog(path, segment_bytes=120)
    assert contents(again) == contents(log)
    assert again.start_offset == log.start_offset
    assert again.end_offset_and_epoch() == log.end_offset_and_epoch()
    for probe in range(0, epoch + 2):
        assert again.end_offset_for_epoch(probe) == log.end_offset_for_epoch(probe)


def test_quorum_store_round_trip_and_bad_file(tmp_path: Path) -> None:
    store = FileQuorumStateStore(tmp_path / "quorum-state")
    assert store.read() is None
    store.write(ElectionState(7, 2, None))
    assert FileQuorumStateStore(tmp_path / "quorum-state").read() == ElectionState(7, 2, None)
    (tmp_path / "quorum-state").write_text("{not json")
    with pytest.raises(QuorumStateCorruptError, match="quorum-state: not a quorum state file"):
        store.read()


def test_fsyncs_are_recorded_in_the_ledger_so_a_power_loss_keeps_them(tmp_path: Path) -> None:
    """A lose-unfsynced fault truncates every file to its ledger size: Raft's
    fsynced entries and votes must be in the ledger, or the fault would erase
    acknowledged metadata and a cast vote (and the node would not restart)."""
    from broker.log.ledger import FsyncLedger, read_ledger

    ledger = FsyncLedger(tmp_path)
    log = FileLog(tmp_path / "meta", 200, ledger=ledger)
    for i in range(12):  # enough to roll segments
        log.append_as_leader([f"r{i}".encode()], 1, EntryKind.DATA)
    store = FileQuorumStateStore(tmp_path / "quorum-state", ledger)
    store.write(ElectionState(epoch=3, voted_for=2, leader_id=None))
    sizes = read_ledger(tmp_path)
    segments = sorted((tmp_path / "meta").glob("*.log"))
    assert len(segments) > 1
    for segment in segments:
        assert sizes[segment.relative_to(tmp_path).as_posix()] == segment.stat().st_size
    assert sizes["quorum-state"] == (tmp_path / "quorum-state").stat().st_size
    log.truncate_to(5)
    kept = sorted((tmp_path / "meta").glob("*.log"))[-1]
    assert read_ledger(tmp_path)[kept.relative_to(tmp_path).as_posix()] == kept.stat().st_size
