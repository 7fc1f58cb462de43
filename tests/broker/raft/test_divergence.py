"""Reconciliation: whatever a follower holds beyond the common prefix, fetch-validate-
truncate rounds leave it a prefix of the leader's log without losing a shared entry."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.raft.divergence import FetchPosition, truncation_offset, validate_fetch
from broker.raft.entries import EntryKind, LogEntry, OffsetAndEpoch, Snapshot
from broker.raft.memory_log import MemoryLog


def build(epochs: list[int], tag: bytes) -> MemoryLog:
    log = MemoryLog()
    log.append_as_follower([LogEntry(i, e, tag + bytes([i])) for i, e in enumerate(epochs)])
    return log


def reconcile(leader: MemoryLog, follower: MemoryLog) -> int:
    """Run fetch rounds until the leader accepts the follower's position."""
    for rounds in range(1, 50):
        check = validate_fetch(leader, follower.end_offset, follower.last_fetched_epoch())
        if check.kind is FetchPosition.VALID:
            return rounds
        assert check.kind is FetchPosition.DIVERGING and check.position is not None
        follower.truncate_to(truncation_offset(follower, check.position))
    raise AssertionError("reconciliation did not converge")


epochs_st = st.lists(st.integers(0, 2), max_size=8).map(
    lambda steps: [1 + sum(steps[: i + 1]) for i in range(len(steps))]
)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(prefix=epochs_st, extra=epochs_st, keep=st.integers(0, 8), newer=epochs_st)
def test_follower_converges_to_a_prefix_of_the_leader(
    prefix: list[int], extra: list[int], keep: int, newer: list[int]
) -> None:
    base = prefix[-1] if prefix else 1
    shared = prefix + [base + e for e in extra]
    top = max(shared, default=1)
    keep = min(keep, len(extra))
    leader_epochs = prefix + [base + e for e in extra[:keep]] + [top + 1 + e for e in newer]
    leader = build(leader_epochs, b"")
    follower = build(shared, b"")
    reconcile(leader, follower)
    common = len(prefix) + keep
    assert follower.end_offset >= common, "a shared entry was truncated"
    assert follower.read(0, 100) == leader.read(0, follower.end_offset)


def test_diverged_tail_from_a_lost_epoch_is_cut() -> None:
    """KIP-101 scenario B on the metadata log: follower kept m2 of epoch 1, leader of
    epoch 2 wrote m3 at the same offset; the follower must drop m2."""
    leader = build([1, 2], b"")
    follower = MemoryLog()
    follower.append_as_follower([LogEntry(0, 1, b"\x00"), LogEntry(1, 1, b"m2")])
    check = validate_fetch(leader, 2, 1)
    assert check == type(check)(FetchPosition.DIVERGING, OffsetAndEpoch(1, 1))
    reconcile(leader, follower)
    assert follower.end_offset == 1


def test_follower_behind_the_snapshot_is_sent_the_snapshot() -> None:
    leader = build([1] * 10, b"")
    leader.create_snapshot(Snapshot(OffsetAndEpoch(1, 8), b"s"))
    leader.delete_before_snapshot()
    assert validate_fetch(leader, 3, 1).kind is FetchPosition.SNAPSHOT
    assert validate_fetch(leader, 8, 1).kind is FetchPosition.VALID
    assert validate_fetch(leader, 8, 0).kind is FetchPosition.SNAPSHOT
    assert validate_fetch(leader, 0, 0).kind is FetchPosition.SNAPSHOT
    empty = MemoryLog()
    assert validate_fetch(empty, 0, 0).kind is FetchPosition.VALID
    assert EntryKind.DATA is build([1], b"").read(0, 1)[0].kind
