"""ReplicatedPartition on a real log: the HW is the smallest LEO of the ISR and never
falls, acks=all waits for it, followers copy batches with the leader's offsets and
epochs, and KIP-101's end offset for an epoch comes from the leader-epoch cache."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.api.list_offsets import EARLIEST, LATEST, lookup
from broker.config import TOPIC_KEYS
from broker.errors import ErrorCode, KafkaError
from broker.log.ledger import FsyncLedger
from broker.log.log import Log
from broker.replication.partition import ReplicatedPartition, end_offset_for_epoch
from broker.server.topics import PartitionAssignment
from tests.broker.batches import make_batch, read_values

DEFAULTS = {name: key.default for name, key in TOPIC_KEYS.items()}


def replica(
    tmp_path: Path, ledger: FsyncLedger, node: int, leader: int = 1, epoch: int = 0,
    min_isr: int = 1,
) -> ReplicatedPartition:  # fmt: skip
    log = Log.open(tmp_path / f"n{node}" / "t-0", {**DEFAULTS, "min.insync.replicas": min_isr},
                   ledger, clean=True)  # fmt: skip
    return ReplicatedPartition(
        "t", 0, log, PartitionAssignment([1, 2, 3], leader, epoch, [1, 2, 3]), node
    )


def test_hw_is_the_smallest_isr_leo_and_never_falls(tmp_path: Path, ledger: FsyncLedger) -> None:
    leader = replica(tmp_path, ledger, 1)
    leader.log.append(bytearray(make_batch([b"a", b"b", b"c"])), 0)
    leader.maybe_advance_hw()
    assert leader.high_watermark == 0  # followers' positions unknown
    leader.update_follower(2, 3)
    assert leader.high_watermark == 0
    leader.update_follower(3, 1)
    assert leader.high_watermark == 1
    leader.update_follower(3, 3)
    assert leader.high_watermark == 3
    leader.update_follower(3, 0)  # a stale fetch offset never moves the HW back
    assert leader.high_watermark == 3
    leader.reassign(PartitionAssignment([1, 2, 3], 1, 0, [1, 2]))  # 3 left the ISR
    leader.log.append(bytearray(make_batch([b"d"])), 0)
    leader.update_follower(2, 4)
    assert leader.high_watermark == 4


def test_acks_all_waits_for_the_hw(tmp_path: Path, ledger: FsyncLedger) -> None:
    async def scenario() -> None:
        leader = replica(tmp_path, ledger, 1, min_isr=2)
        leader.log.append(bytearray(make_batch([b"a"])), 0)
        waiting = asyncio.ensure_future(leader.wait_replicated(1))
        await asyncio.sleep(0.01)
        assert not waiting.done()
        leader.update_follower(2, 1)
        leader.update_follower(3, 1)
        await asyncio.wait_for(waiting, 1)

        leader.log.append(bytearray(make_batch([b"b"])), 0)
        waiting = asyncio.ensure_future(leader.wait_replicated(2))
        leader.reassign(PartitionAssignment([1, 2, 3], 1, 0, [1]))  # ISR shrank below 2
        await asyncio.sleep(0.01)
        assert not waiting.done()  # the HW stands still under the minimum ISR
        leader.reassign(PartitionAssignment([1, 2, 3], 1, 0, [1, 2]))
        leader.update_follower(2, 2)
        await asyncio.wait_for(waiting, 1)

        waiting = asyncio.ensure_future(leader.wait_replicated(3))
        await asyncio.sleep(0.01)
        leader.reassign(PartitionAssignment([1, 2, 3], 2, 1, [1, 2]))  # deposed
        with pytest.raises(KafkaError) as deposed:
            await asyncio.wait_for(waiting, 1)
        assert deposed.value.code is ErrorCode.not_leader_or_follower
        with pytest.raises(KafkaError):  # and later waits are refused at once
            await leader.wait_replicated(3)

    asyncio.run(scenario())


def test_follower_adopts_the_leaders_log_start_once_its_hw_reaches_it(
    tmp_path: Path, ledger: FsyncLedger
) -> None:
    follower = replica(tmp_path, ledger, 2)
    batch = bytearray(make_batch([b"a", b"b", b"c", b"d"]))
    follower.append_as_follower(bytes(batch), leader_hw=1, leader_start=3)
    assert follower.log.log_start_offset == 0  # its HW (1) is below it yet
    follower.append_as_follower(b"", leader_hw=4, leader_start=3)
    assert follower.log.log_start_offset == 3
    assert lookup(follower, EARLIEST, False) == (3, -1)
    follower.append_as_follower(b"", leader_hw=4, leader_start=1)  # never lowered
    assert follower.log.log_start_offset == 3


def test_low_watermark_is_the_smallest_log_start_over_the_isr(
    tmp_path: Path, ledger: FsyncLedger
) -> None:
    leader = replica(tmp_path, ledger, 1)
    leader.log.append(bytearray(make_batch([b"a", b"b", b"c", b"d"])), 0)
    leader.update_follower(2, 4, log_start=0)
    leader.update_follower(3, 4, log_start=0)
    leader.log.maybe_increment_log_start_offset(3)
    assert leader.low_watermark == 0
    leader.update_follower(2, 4, log_start=3)
    assert leader.low_watermark == 0  # follower 3 still starts at 0
    leader.reassign(PartitionAssignment([1, 2, 3], 1, 0, [1, 2]))  # 3 left the ISR
    assert leader.low_watermark == 3
    leader.reassign(PartitionAssignment([1, 2, 3], 1, 1, [1, 2]))  # a new leadership
    assert leader.low_watermark == -1  # until follower 2 reports again


def test_delete_records_waits_for_the_isr_to_raise_its_log_start(
    tmp_path: Path, ledger: FsyncLedger
) -> None:
    async def scenario() -> None:
        leader = replica(tmp_path, ledger, 1)
        leader.log.append(bytearray(make_batch([b"a", b"b", b"c", b"d"])), 0)
        for follower in (2, 3):
            leader.update_follower(follower, 4, log_start=0)
        with pytest.raises(KafkaError) as refused:
            leader.delete_records_on_leader(5)  # past the HW
        assert refused.value.code is ErrorCode.offset_out_of_range
        assert leader.delete_records_on_leader(-1) == 4  # the HW
        waiting = asyncio.ensure_future(leader.wait_low_watermark(4, 5))
        await asyncio.sleep(0.01)
        leader.update_follower(2, 4, log_start=4)
        await asyncio.sleep(0.01)
        assert not waiting.done()  # follower 3 still starts at 0
        leader.update_follower(3, 4, log_start=4)
        assert await asyncio.wait_for(waiting, 1) == 4
        leader.log.append(bytearray(make_batch([b"e"])), 0)
        leader.update_follower(2, 5, log_start=4)
        leader.update_follower(3, 5, log_start=4)
        leader.delete_records_on_leader(5)
        with pytest.raises(KafkaError) as timed_out:
            await leader.wait_low_watermark(5, 0.05)
        assert timed_out.value.code is ErrorCode.request_timed_out
        deposed = asyncio.ensure_future(leader.wait_low_watermark(5, 5))
        await asyncio.sleep(0.01)
        leader.reassign(PartitionAssignment([1, 2, 3], 2, 1, [1, 2, 3]))
        with pytest.raises(KafkaError) as lost:
            await asyncio.wait_for(deposed, 1)
        assert lost.value.code is ErrorCode.not_leader_or_follower

    asyncio.run(scenario())


def test_follower_copies_offsets_epochs_and_truncates(tmp_path: Path, ledger: FsyncLedger) -> None:
    leader = replica(tmp_path, ledger, 1, epoch=4)
    follower = replica(tmp_path, ledger, 2, epoch=4)
    leader.log.append(bytearray(make_batch([b"a", b"b"])), 3)
    leader.log.append(bytearray(make_batch([b"c"])), 4)
    follower.append_as_follower(leader.log.read(0, 1 << 20, 3), leader_hw=2)
    assert read_values(follower.log.read(0, 1 << 20, 3)) == [(0, b"a"), (1, b"b"), (2, b"c")]
    assert follower.high_watermark == 2
    assert end_offset_for_epoch(follower.log, 3) == (3, 2)
    follower.truncate_to(2)
    assert follower.log.next_offset == 2 and follower.high_watermark == 2


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=8).map(sorted), st.integers(0, 5))
def test_end_offset_for_epoch_matches_a_model(tmp_path_factory, epochs, asked) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path_factory.mktemp("epochs")
    ledger = FsyncLedger(path)
    try:
        log = Log.open(path / "t-0", DEFAULTS, ledger, clean=True)
        for epoch in epochs:  # one record per batch, so offset i has epochs[i]
            log.append(bytearray(make_batch([b"x"])), epoch)
        lower = [e for e in epochs if e <= asked]
        if asked > max(epochs):  # newer than every epoch of the log: unknown
            expected = (-1, -1)
        elif not lower:  # older than every epoch: it ends where the first one starts
            expected = (asked, 0)
        else:
            found = max(lower)
            later = [i for i, e in enumerate(epochs) if e > found]
            expected = (found, later[0] if later else len(epochs))
        assert end_offset_for_epoch(log, asked) == expected
        log.close()
    finally:
        ledger.close()


def test_a_follower_lags_once_not_caught_up_for_the_lag_time(
    tmp_path: Path, ledger: FsyncLedger
) -> None:
    """Kafka's lag: time since the follower last fetched from the leader's LEO (or
    from the LEO the leader had at the follower's previous fetch)."""
    leader = replica(tmp_path, ledger, 1)
    start = leader.caught_up_at[2]  # the leadership started the clocks
    leader.log.append(bytearray(make_batch([b"a", b"b"])), 0)
    leader.update_follower(2, 2, now=start + 1)  # at the LEO: caught up
    leader.update_follower(3, 0, now=start + 1)  # behind
    assert leader.lagging(1500, now=start + 2) == [3]
    leader.log.append(bytearray(make_batch([b"c"])), 0)
    leader.update_follower(3, 2, now=start + 3)  # reached the LEO of its last fetch...
    assert leader.caught_up_at[3] == start + 1  # ...so it was caught up back then
    assert leader.lagging(1500, now=start + 2.4) == []
    assert leader.lagging(1500, now=start + 3) == [2, 3]  # 2 has not fetched since
    leader.update_follower(2, 3, now=start + 3)
    leader.update_follower(3, 3, now=start + 3)
    assert leader.lagging(1500, now=start + 4) == []
    leader.reassign(PartitionAssignment([1, 2, 3], 1, 0, [1, 2]))  # 3 left the ISR
    assert leader.lagging(1500, now=start + 10) == [2]  # only ISR members are judged
    follower = replica(tmp_path, ledger, 2)
    assert follower.lagging(0, now=start + 100) == []  # followers judge no one


def test_a_new_leader_below_its_epoch_start_has_no_latest_offset(
    tmp_path: Path, ledger: FsyncLedger
) -> None:
    """KIP-207: the new leader's HW (from its checkpoint) may be below the previous
    leader's; ListOffsets(latest) answers OFFSET_NOT_AVAILABLE until it catches up."""
    log = Log.open(tmp_path / "t-0", DEFAULTS, ledger, clean=True)
    log.append(bytearray(make_batch([b"a", b"b", b"c"])), 0)
    follower = ReplicatedPartition(
        "t", 0, log, PartitionAssignment([1, 2, 3], 2, 0, [1, 2, 3]), 1, high_watermark=1
    )
    assert lookup(follower, LATEST, False) == (1, -1)  # not a leader: no epoch start
    follower.reassign(PartitionAssignment([1, 2, 3], 1, 1, [1, 2, 3]))  # now leads
    assert follower.epoch_start_offset == 3 and follower.high_watermark == 1
    for read_committed in (False, True):
        with pytest.raises(KafkaError) as gap:
            lookup(follower, LATEST, read_committed)
        assert gap.value.code is ErrorCode.offset_not_available
    assert lookup(follower, EARLIEST, False) == (0, -1)  # the other queries still answer
    follower.update_follower(2, 3)
    follower.update_follower(3, 3)
    assert lookup(follower, LATEST, False) == (3, -1)


def test_a_follower_joining_the_isr_holds_the_hw_until_the_controller_decides(
    tmp_path: Path, ledger: FsyncLedger
) -> None:
    """Kafka's maximal ISR: from the moment the leader proposes a caught-up
    follower for the ISR, the HW counts it. Otherwise the HW could pass the
    follower's log end while the controller commits it into the ISR, and it
    could then be elected without records acknowledged as committed."""
    leader = replica(tmp_path, ledger, 1)
    leader.reassign(PartitionAssignment([1, 2, 3], 1, 0, [1, 2], partition_epoch=4))  # 3 is out
    proposed: list[int] = []
    leader.on_caught_up = lambda _partition, r: proposed.append(r) is None
    leader.log.append(bytearray(make_batch([b"a", b"b"])), 0)
    leader.update_follower(2, 2)
    leader.update_follower(3, 2)  # caught up with the HW: proposed for the ISR
    assert proposed == [3] and leader.joining == {3: 4} and leader.high_watermark == 2
    leader.log.append(bytearray(make_batch([b"c", b"d"])), 0)
    leader.update_follower(2, 4)
    assert leader.high_watermark == 2  # 3 is joining: its log end holds the HW
    leader.update_follower(3, 3)
    assert leader.high_watermark == 3 and proposed == [3]  # proposed once
    committed = PartitionAssignment([1, 2, 3], 1, 0, [1, 2, 3], partition_epoch=5)
    leader.reassign(committed)
    assert leader.joining == {}
    leader.update_follower(3, 4)
    assert leader.high_watermark == 4


def test_a_newer_partition_epoch_decides_the_expansion_whatever_the_isr(
    tmp_path: Path, ledger: FsyncLedger
) -> None:
    """The controller committed 3 into the ISR and then fenced it, and both
    records reach the leader as one change: the newer partition epoch says the
    expansion was decided, so 3 no longer holds the HW (it would for good)."""
    leader = replica(tmp_path, ledger, 1)
    leader.reassign(PartitionAssignment([1, 2, 3], 1, 0, [1, 2], partition_epoch=4))
    leader.on_caught_up = lambda _partition, _r: True
    leader.log.append(bytearray(make_batch([b"a", b"b"])), 0)
    leader.update_follower(2, 2)
    leader.update_follower(3, 2)
    leader.reassign(PartitionAssignment([1, 2, 3], 1, 0, [1, 2], partition_epoch=4))  # same
    assert leader.joining == {3: 4}  # nothing decided yet: still counted
    leader.reassign(PartitionAssignment([1, 2, 3], 1, 0, [1, 2], partition_epoch=6))
    assert leader.joining == {}
    leader.log.append(bytearray(make_batch([b"c", b"d", b"e"])), 0)
    leader.update_follower(2, 5)
    assert leader.high_watermark == 5


def test_a_refused_expansion_lets_the_hw_count_the_isr_alone(
    tmp_path: Path, ledger: FsyncLedger
) -> None:
    leader = replica(tmp_path, ledger, 1)
    leader.reassign(PartitionAssignment([1, 2, 3], 1, 0, [1, 2]))
    leader.on_caught_up = lambda _partition, _r: True
    leader.log.append(bytearray(make_batch([b"a", b"b"])), 0)
    leader.update_follower(2, 2)
    leader.update_follower(3, 2)
    leader.log.append(bytearray(make_batch([b"c"])), 0)
    leader.update_follower(2, 3)
    assert leader.high_watermark == 2
    leader.expansion_refused(3)  # the controller said no
    assert leader.joining == {} and leader.high_watermark == 3
    leader.update_follower(3, 3)  # proposed again
    assert leader.joining == {3: 0}
    leader.reassign(PartitionAssignment([1, 2, 3], 2, 1, [1, 2]))  # deposed
    assert leader.joining == {}


def test_the_hw_stands_still_while_the_isr_is_under_its_minimum(
    tmp_path: Path, ledger: FsyncLedger
) -> None:
    """Kafka 3.7 and later: with the ISR below min.insync.replicas a write may be
    on the leader alone (acks=1, or acks=all told NOT_ENOUGH_REPLICAS_AFTER_APPEND),
    so the HW does not expose it until the ISR is back at its minimum."""
    leader = replica(tmp_path, ledger, 1, min_isr=2)
    leader.log.append(bytearray(make_batch([b"a"])), 0)
    leader.update_follower(2, 1)
    leader.update_follower(3, 1)
    assert leader.high_watermark == 1
    leader.reassign(PartitionAssignment([1, 2, 3], 1, 0, [1]))  # both followers out
    assert leader.under_min_isr
    leader.log.append(bytearray(make_batch([b"b"])), 0)
    leader.maybe_advance_hw()
    assert leader.high_watermark == 1  # on old brokers: 2, the leader's log end
    leader.reassign(PartitionAssignment([1, 2, 3], 1, 0, [1, 2]))
    leader.update_follower(2, 2)
    assert leader.high_watermark == 2


def test_the_minimum_is_capped_at_the_replica_count(tmp_path: Path, ledger: FsyncLedger) -> None:
    log = Log.open(tmp_path / "t-0", {**DEFAULTS, "min.insync.replicas": 2}, ledger, clean=True)
    alone = ReplicatedPartition("t", 0, log, PartitionAssignment([1], 1, 0, [1]), 1)
    alone.log.append(bytearray(make_batch([b"a"])), 0)
    alone.maybe_advance_hw()
    assert not alone.under_min_isr and alone.high_watermark == 1


def test_the_lso_waits_for_the_marker_to_reach_the_isr(tmp_path: Path, ledger: FsyncLedger) -> None:
    """Kafka's unreplicated transactions: a committed transaction's data stays
    above the LSO until its marker is below the HW, so a read_committed
    reader never sees it while a failover could still lose the marker."""
    leader = replica(tmp_path, ledger, 1)
    txn = make_batch([b"a", b"b"], producer_id=7, producer_epoch=0, base_sequence=0,
                     transactional=True)  # fmt: skip
    leader.log.append(bytearray(txn), 0)
    for follower in (2, 3):
        leader.update_follower(follower, 2)
    assert (leader.high_watermark, leader.last_stable_offset) == (2, 0)  # still open
    marker = leader.log.append_marker(7, 0, True, 0, 0)
    assert marker == 2
    leader.update_follower(2, 3)
    assert (leader.high_watermark, leader.last_stable_offset) == (2, 0)  # marker unreplicated
    leader.update_follower(3, 3)
    assert (leader.high_watermark, leader.last_stable_offset) == (3, 3)
    assert leader.log.producer_state.unreplicated == {}  # forgotten once settled
