"""The checkpoints beside the log, in Kafka's text formats: the leader-epoch cache
(``leader-epoch-checkpoint``: written on every new epoch, cut with the log, read
back at restart) and the high-watermark checkpoint (``replication-offset-checkpoint``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.config import TOPIC_KEYS
from broker.log.checkpoint_file import CheckpointError, int_field, read_checkpoint
from broker.log.hw_checkpoint import CHECKPOINT_NAME, HighWatermarkCheckpoint
from broker.log.leader_epoch_cache import CHECKPOINT_NAME as EPOCHS
from broker.log.leader_epoch_cache import EpochEntry
from broker.log.ledger import FsyncLedger
from broker.log.log import Log
from tests.broker.batches import make_batch

DEFAULTS = {name: key.default for name, key in TOPIC_KEYS.items()}


def append(log: Log, epoch: int, count: int = 1) -> None:
    for _ in range(count):
        log.append(bytearray(make_batch([b"x"])), epoch)


def test_epoch_checkpoint_is_kafkas_text_format_and_survives_a_clean_restart(
    tmp_path: Path, ledger: FsyncLedger
) -> None:
    log = Log.open(tmp_path / "t-0", DEFAULTS, ledger, clean=True)
    append(log, 0, 2)
    append(log, 3, 1)
    log.epochs.assign(5, log.next_offset)  # a leader's new epoch, before any write
    assert (tmp_path / "t-0" / EPOCHS).read_text() == "0\n3\n0 0\n3 2\n5 3\n"
    log.close()
    reopened = Log.open(tmp_path / "t-0", DEFAULTS, ledger, clean=True)
    # as Kafka's load, an epoch starting at the log end holds nothing and is cut
    assert reopened.epochs.entries == [EpochEntry(0, 0), EpochEntry(3, 2)]
    assert reopened.epochs.end_offset_for(0, reopened.next_offset) == (0, 2)
    assert reopened.epochs.end_offset_for(3, reopened.next_offset) == (3, 3)
    reopened.close()


def test_truncation_cuts_the_epoch_cache_with_the_log(tmp_path: Path, ledger: FsyncLedger) -> None:
    log = Log.open(tmp_path / "t-0", DEFAULTS, ledger, clean=True)
    append(log, 1, 2)
    append(log, 2, 2)
    log.truncate_to(2)
    assert log.epochs.entries == [EpochEntry(1, 0)]
    assert read_checkpoint(tmp_path / "t-0" / EPOCHS, 2) == [["1", "0"]]
    assert log.epochs.end_offset_for(1, log.next_offset) == (1, 2)
    log.close()


def test_after_a_crash_epochs_missing_from_the_checkpoint_come_from_the_log(
    tmp_path: Path, ledger: FsyncLedger
) -> None:
    log = Log.open(tmp_path / "t-0", DEFAULTS, ledger, clean=True)
    append(log, 1, 2)
    append(log, 4, 1)
    log.flush()
    (tmp_path / "t-0" / EPOCHS).write_text("0\n1\n1 0\n")  # as if written before epoch 4
    reopened = Log.open(tmp_path / "t-0", DEFAULTS, ledger, clean=False)
    assert reopened.epochs.entries == [EpochEntry(1, 0), EpochEntry(4, 2)]
    reopened.close()


def test_a_malformed_epoch_checkpoint_is_rebuilt_from_the_log(
    tmp_path: Path, ledger: FsyncLedger
) -> None:
    log = Log.open(tmp_path / "t-0", DEFAULTS, ledger, clean=True)
    append(log, 2, 1)
    log.close()
    (tmp_path / "t-0" / EPOCHS).write_text("0\n7\ngarbage\n")
    reopened = Log.open(tmp_path / "t-0", DEFAULTS, ledger, clean=True)
    assert reopened.epochs.entries == [EpochEntry(2, 0)]
    reopened.close()


def test_a_newer_epoch_at_an_earlier_offset_replaces_what_it_contradicts(
    tmp_path: Path, ledger: FsyncLedger
) -> None:
    log = Log.open(tmp_path / "t-0", DEFAULTS, ledger, clean=True)
    append(log, 1, 3)
    log.epochs.assign(2, 3)
    log.epochs.assign(3, 1)  # follower about to be truncated to 1 by the new leader
    assert log.epochs.entries == [EpochEntry(1, 0), EpochEntry(3, 1)]
    log.close()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(1, 3)), min_size=1, max_size=6))
def test_end_offsets_match_the_batches_after_a_restart(tmp_path_factory, runs) -> None:  # type: ignore[no-untyped-def]
    """Whatever the epochs of the appended batches, the reloaded cache gives, for each
    epoch, the offset where the log's next higher epoch begins."""
    path = tmp_path_factory.mktemp("epochs")
    ledger = FsyncLedger(path)
    try:
        log = Log.open(path / "t-0", DEFAULTS, ledger, clean=True)
        epochs: list[int] = []
        top = -1
        for epoch, count in runs:
            top = max(top, epoch)  # leaders' epochs only grow
            append(log, top, count)
            epochs += [top] * count
        log.close()
        log = Log.open(path / "t-0", DEFAULTS, ledger, clean=False)
        for asked in set(epochs):
            later = [i for i, e in enumerate(epochs) if e > asked]
            assert log.epochs.end_offset_for(asked, log.next_offset) == (
                asked,
                later[0] if later else len(epochs),
            )
        log.close()
    finally:
        ledger.close()


def test_hw_checkpoint_round_trip_in_kafkas_format(tmp_path: Path, ledger: FsyncLedger) -> None:
    checkpoint = HighWatermarkCheckpoint(tmp_path, ledger)
    assert checkpoint.read() == {}
    checkpoint.write({("b", 1): 7, ("a", 0): 3})
    assert (tmp_path / CHECKPOINT_NAME).read_text() == "0\n2\na 0 3\nb 1 7\n"
    assert HighWatermarkCheckpoint(tmp_path, ledger).read() == {("a", 0): 3, ("b", 1): 7}


@pytest.mark.parametrize(
    ("text", "where"),
    [("1\n0\n", ":1: expected version"), ("0\n2\na 0 1\n", ":2: entry count"),
     ("0\n1\na 0\n", ":3: expected 3 fields"), ("0\n1\na x 1\n", "'x' is not an integer")],
)  # fmt: skip
def test_malformed_checkpoints_are_named_with_their_line(
    tmp_path: Path, ledger: FsyncLedger, text: str, where: str
) -> None:
    path = tmp_path / CHECKPOINT_NAME
    path.write_text(text)
    with pytest.raises(CheckpointError, match=where):
        for _topic, partition, offset in read_checkpoint(path, 3) or []:
            int_field(path, partition), int_field(path, offset)
    # the broker starts anyway: every replica from HW 0, learnt again from its leader
    assert HighWatermarkCheckpoint(tmp_path, ledger).read() == {}
