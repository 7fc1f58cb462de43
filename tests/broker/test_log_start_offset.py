"""The log start offset as a quantity of its own (Kafka's ``logStartOffset``):
raised inside a segment, never lowered, refusing reads below it, answering
ListOffsets EARLIEST, deleting the whole segments below it, and kept across
restarts by ``log-start-offset-checkpoint``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from broker.api.list_offsets import EARLIEST, lookup
from broker.errors import ErrorCode, KafkaError
from broker.log.checkpoint_file import read_checkpoint, write_checkpoint
from broker.log.ledger import FsyncLedger
from broker.log.log import Log
from broker.log.start_checkpoint import CHECKPOINT_NAME
from broker.server.replica_manager import ReplicaManager
from broker.server.topics import TopicStore
from broker.server_properties import load_config
from tests.broker.batches import make_batch
from tests.broker.managers import replica_manager
from tests.broker.test_log import open_log, settings, values_of


def reopened_manager(data_dir: Path, clean: bool) -> ReplicaManager:
    """Node 1's ReplicaManager started again on ``data_dir`` (topic ``t`` exists)."""
    config = load_config(1, "127.0.0.1:0", data_dir, None, [])
    ledger = FsyncLedger(data_dir)
    manager = ReplicaManager(config, ledger, TopicStore(data_dir, ledger))
    manager.open_all(clean)
    return manager


def fill(log, count: int) -> None:
    for i in range(count):
        log.append(bytearray(make_batch([b"%03d" % i + b"x" * 60])), 0)


def test_raised_inside_a_segment_never_lowered_and_reads_below_refused(
    tmp_path: Path, ledger: FsyncLedger
) -> None:
    log = open_log(tmp_path, ledger)
    fill(log, 10)
    assert log.maybe_increment_log_start_offset(4)
    assert not log.maybe_increment_log_start_offset(2)
    assert (log.log_start_offset, log.segments[0].base_offset) == (4, 0)
    with pytest.raises(KafkaError) as e:
        log.read(3, 1 << 20, log.next_offset)
    assert e.value.code == ErrorCode.offset_out_of_range
    assert values_of(log, 4)[0] == (4, b"004" + b"x" * 60)
    with pytest.raises(KafkaError) as e:
        log.maybe_increment_log_start_offset(11)  # past the log end
    assert e.value.code == ErrorCode.offset_out_of_range


def test_whole_segments_below_it_go_whatever_the_policy(
    tmp_path: Path, ledger: FsyncLedger
) -> None:
    log = open_log(tmp_path, ledger, segment_bytes=300, cleanup_policy="compact")
    fill(log, 20)
    bases = [s.base_offset for s in log.segments]
    cut = bases[2] + 1  # inside the third segment
    log.maybe_increment_log_start_offset(cut)
    assert log.apply_retention(now_ms=0, upper=log.next_offset) == 2
    assert log.segments[0].base_offset == bases[2] and log.log_start_offset == cut
    assert log.epochs.entries[0].start_offset == cut


def test_timestamp_lookup_starts_at_the_log_start(tmp_path: Path, ledger: FsyncLedger) -> None:
    log = open_log(tmp_path, ledger)
    log.append(bytearray(make_batch([b"a", b"b", b"c"], timestamp_ms=1000)), 0)
    log.maybe_increment_log_start_offset(1)
    assert log.offset_for_timestamp(0) == (1, 1001)


def test_epochs_replayed_after_a_crash_start_no_earlier_than_the_log(
    tmp_path: Path, ledger: FsyncLedger
) -> None:
    log = open_log(tmp_path, ledger)
    log.append(bytearray(make_batch([b"%d" % i for i in range(10)])), 3)
    log.maybe_increment_log_start_offset(4)  # inside the one batch
    log.flush()
    reopened = Log.open(tmp_path / "t-0", settings(), ledger, clean=False, start=4)
    assert [(e.epoch, e.start_offset) for e in reopened.epochs.entries] == [(3, 4)]


def test_a_checkpoint_past_the_recovered_log_end_starts_it_empty_there(
    tmp_path: Path, ledger: FsyncLedger
) -> None:
    log = open_log(tmp_path, ledger)
    fill(log, 3)
    log.close()
    reopened = Log.open(tmp_path / "t-0", settings(), ledger, clean=False, start=7)
    assert (reopened.log_start_offset, reopened.next_offset) == (7, 7)
    assert reopened.append(bytearray(make_batch([b"n"])), 0).first_offset == 7


def test_checkpointed_at_shutdown_and_kept_by_a_restart(tmp_path: Path) -> None:
    with replica_manager(tmp_path) as manager:
        partition = manager.partition("t", 0)
        asyncio.run(manager.append_records("t", 0, make_batch([b"a", b"b", b"c", b"d"]), -1))
        partition.log.maybe_increment_log_start_offset(3)
        assert lookup(partition, EARLIEST, False) == (3, -1)
    assert read_checkpoint(tmp_path / CHECKPOINT_NAME, 3) == [["t", "0", "3"]]
    restarted = reopened_manager(tmp_path, clean=True)
    assert restarted.partition("t", 0).log.log_start_offset == 3
    restarted.close()


def test_recovery_after_a_crash_keeps_the_periodic_checkpoint(tmp_path: Path) -> None:
    with replica_manager(tmp_path) as manager:
        asyncio.run(manager.append_records("t", 0, make_batch([b"a", b"b", b"c"]), -1))
        manager.partition("t", 0).log.maybe_increment_log_start_offset(2)
        manager.checkpoint_log_start_offsets()  # the periodic task
        manager.partition("t", 0).log.flush()
        crashed = reopened_manager(tmp_path, clean=False)  # the first never closed
        assert crashed.partition("t", 0).log.log_start_offset == 2
        crashed.close()


def test_an_open_transaction_below_it_is_unstable_from_the_log_start(tmp_path: Path) -> None:
    with replica_manager(tmp_path) as manager:
        txn = make_batch([b"t"], 9, 0, 0, transactional=True)
        asyncio.run(manager.append_records("t", 0, txn, -1))
        asyncio.run(manager.append_records("t", 0, make_batch([b"a", b"b"]), -1))
        partition = manager.partition("t", 0)
        assert partition.last_stable_offset == 0
        partition.log.maybe_increment_log_start_offset(2)
        assert partition.last_stable_offset == 2


def test_a_new_log_ignores_a_stale_entry_of_a_deleted_topic(tmp_path: Path) -> None:
    ledger = FsyncLedger(tmp_path)
    write_checkpoint(tmp_path / CHECKPOINT_NAME, [("t", 0, 5)], ledger)  # "t" is gone
    ledger.close()
    with replica_manager(tmp_path) as manager:  # creates "t" anew
        assert manager.partition("t", 0).log.log_start_offset == 0
