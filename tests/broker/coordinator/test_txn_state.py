"""The transaction state machine, its log records and key partitioning."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.coordinator.partitioning import java_string_hash, partition_for
from broker.coordinator.txn import records
from broker.coordinator.txn.producer_ids import ProducerIdManager, ProducerIdStateError
from broker.coordinator.txn.state import (
    IllegalTransition,
    TransactionMetadata,
    TransactionState,
    TxnSnapshot,
)
from broker.log.ledger import FsyncLedger, read_ledger

S = TransactionState


def metadata(state: TransactionState = S.EMPTY, epoch: int = 0) -> TransactionMetadata:
    return TransactionMetadata("tx", TxnSnapshot(7, epoch, 60_000, state, frozenset(), -1, 0))


def test_java_string_hash_matches_java() -> None:
    # Values of "…".hashCode() in Java.
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert java_string_hash("é€") == 233 * 31 + 8364


def test_partition_for_is_in_range_and_handles_min_value() -> None:
    assert partition_for("polygenelubricants", 50) == 0
    assert all(0 <= partition_for(f"g{i}", 50) < 50 for i in range(200))
    assert len({partition_for(f"g{i}", 50) for i in range(200)}) > 30


def test_kafkas_transition_table() -> None:
    assert S.PREPARE_COMMIT.valid_previous_states == {S.ONGOING}
    assert S.PREPARE_ABORT.valid_previous_states == {S.ONGOING, S.PREPARE_EPOCH_FENCE}
    assert S.COMPLETE_COMMIT.valid_previous_states == {S.PREPARE_COMMIT}
    assert S.COMPLETE_ABORT.valid_previous_states == {S.PREPARE_ABORT}
    assert S.ONGOING.valid_previous_states == {
        S.ONGOING,
        S.EMPTY,
        S.COMPLETE_COMMIT,
        S.COMPLETE_ABORT,
    }


@pytest.mark.parametrize(
    ("start", "target"),
    [
        (S.EMPTY, S.PREPARE_COMMIT),
        (S.EMPTY, S.COMPLETE_ABORT),
        (S.ONGOING, S.COMPLETE_COMMIT),
        (S.PREPARE_COMMIT, S.PREPARE_ABORT),
        (S.PREPARE_ABORT, S.ONGOING),
        (S.COMPLETE_COMMIT, S.PREPARE_COMMIT),
    ],
)
def test_illegal_transitions_are_refused_and_leave_the_state(start: S, target: S) -> None:
    md = metadata(start)
    with pytest.raises(IllegalTransition):
        md.prepare(target, 1)
    assert md.state is start and md.pending is None


def test_prepare_holds_the_change_until_complete() -> None:
    md = metadata(S.EMPTY)
    pending = md.prepare(S.ONGOING, 5, partitions=frozenset({("t", 0)}), start_ms=5)
    assert md.state is S.EMPTY and md.pending is pending
    with pytest.raises(IllegalTransition):
        md.prepare(S.ONGOING, 6)  # one change at a time
    md.complete()
    assert md.state is S.ONGOING and md.current.partitions == {("t", 0)}
    assert md.current.last_update_ms == 5


def test_cancel_keeps_the_current_state() -> None:
    md = metadata(S.ONGOING)
    md.prepare(S.PREPARE_COMMIT, 1)
    md.cancel()
    assert md.state is S.ONGOING and md.pending is None


def test_epoch_bump_remembers_the_previous_epoch() -> None:
    md = metadata(S.COMPLETE_COMMIT, epoch=3)
    md.prepare(S.EMPTY, 1, producer_epoch=4)
    md.complete()
    assert (md.current.producer_epoch, md.last_producer_epoch) == (4, 3)


def test_full_commit_cycle() -> None:
    md = metadata(S.EMPTY)
    for state in (S.ONGOING, S.PREPARE_COMMIT, S.COMPLETE_COMMIT, S.ONGOING, S.PREPARE_ABORT):
        md.prepare(state, 1)
        md.complete()
    md.prepare(S.COMPLETE_ABORT, 2)
    assert md.complete().state is S.COMPLETE_ABORT


snapshots = st.builds(
    TxnSnapshot,
    producer_id=st.integers(0, 2**63 - 1),
    producer_epoch=st.integers(-1, 32767),
    timeout_ms=st.integers(1, 2**31 - 1),
    state=st.sampled_from(list(S)),
    partitions=st.frozensets(st.tuples(st.text(max_size=20), st.integers(0, 2**31 - 1))),
    start_ms=st.integers(-1, 2**62),
    last_update_ms=st.integers(0, 2**62),
)


@given(snapshots, st.text(max_size=50))
def test_transaction_log_records_round_trip(snapshot: TxnSnapshot, txn_id: str) -> None:
    key = records.encode_key(txn_id)
    value = records.encode_value(snapshot.to_record())
    assert records.decode_key(key) == txn_id
    assert TxnSnapshot.from_record(records.decode_value(value)) == snapshot


@given(st.binary(max_size=40))
def test_garbage_records_raise_a_format_error(data: bytes) -> None:
    from broker.coordinator.serde import RecordFormatError

    try:
        records.decode_value(data)
    except RecordFormatError as exc:
        assert "record" in str(exc) or "version" in str(exc)


def test_producer_ids_resume_past_the_reserved_block(tmp_path: Path) -> None:
    ledger = FsyncLedger(tmp_path)
    first = ProducerIdManager(ledger, block_size=10)
    handed_out = [asyncio.run(first.next_id()) for _ in range(12)]
    assert handed_out == list(range(12))
    again = ProducerIdManager(ledger, block_size=10)  # as after a crash
    assert asyncio.run(again.next_id()) == 20
    assert read_ledger(tmp_path)["producer-id-block"] == len("30\n")
    (tmp_path / "producer-id-block").write_text("garbage")
    with pytest.raises(ProducerIdStateError, match="producer-id-block"):
        ProducerIdManager(ledger)
    ledger.close()
