"""A partition in a replicated cluster (Kafka's ``Partition`` with replication): as
leader it tracks each follower's log end offset (LEO), advances the high watermark
(HW) to the smallest LEO of the ISR — never backwards — and completes acks=all
produces waiting for it; as follower its HW is min(leader's HW, own LEO).

The ISR itself is the controller's (it comes with each metadata image): the
controller removes a broker whose session expired from every ISR; the leader asks
it (AlterPartition) to remove a live follower that has not been caught up to the
leader's LEO for ``replica.lag.time.max.ms`` (``lagging``, Kafka's definition: the
time since the follower last fetched from the LEO, or from the LEO as it was at its
previous fetch), and to put back a follower that has caught up (LEO at or past the
HW and the start of the current leader epoch) through ``on_caught_up``.

A follower proposed for the ISR counts for the HW from the proposal on, until the
controller's decision is known (Kafka's "maximal ISR"): were it left out, the HW
could pass its log end while the controller commits it into the ISR, and once
there it could be elected leader without records the producers were told were
committed. The decision is known when the metadata brings a newer partition
epoch than the proposal was made on (whatever the ISR then is, it is the
controller's), when the controller refuses the change outright, or when the
leadership changes; an unanswered proposal is sent again.

Nor does the HW move while the ISR is smaller than min.insync.replicas (capped
at the replica count), as in Kafka 3.7 and later: no consumer reads a record
that may be on the leader alone (an acks=1 write, or an acks=all write made
while the ISR shrank); an acks=all produce waiting then completes once the ISR
is back, or times out.

A replica starts from its checkpointed HW (``replication-offset-checkpoint``), not
its log end; a new leader whose HW is still below where its epoch began answers
ListOffsets for the latest offset with the retriable OFFSET_NOT_AVAILABLE (KIP-207)
until its followers bring the HW up.

The log start offset is replicated too, as in Kafka: a follower raises its own to
the leader's from each fetch answer (once its HW has reached it) and reports it in
its next fetch; the leader's low watermark is the smallest log start offset over
the ISR, what DeleteRecords waits for."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace

from broker import bugs
from broker.errors import ErrorCode, KafkaError
from broker.log.log import Log
from broker.server.partition import ACK_TIMEOUT_S, Partition
from broker.server.topics import PartitionAssignment

UNKNOWN = -1

CaughtUp = Callable[["ReplicatedPartition", int], bool]
"""``(partition, replica)``: a follower outside the ISR caught up with its leader;
returns whether its ISR expansion was proposed to the controller."""


class ReplicatedPartition(Partition):
    def __init__(
        self,
        topic: str,
        index: int,
        log: Log,
        assignment: PartitionAssignment,
        node_id: int,
        high_watermark: int = 0,
        on_caught_up: CaughtUp | None = None,
    ) -> None:
        super().__init__(topic, index, log, assignment)
        self.node_id = node_id
        self.high_watermark = min(high_watermark, log.next_offset)
        self.follower_leo: dict[int, int] = {}
        self.follower_start: dict[int, int] = {}  # each follower's log start offset
        self.caught_up_at: dict[int, float] = {}  # monotonic time each follower last was
        self._last_fetch: dict[int, tuple[float, int]] = {}  # (time, leader LEO then)
        self.epoch_start_offset = log.next_offset
        self.on_caught_up = on_caught_up
        #: followers proposed for the ISR → the partition epoch the proposal was
        #: made on; counted for the HW until the controller decides
        self.joining: dict[int, int] = {}
        #: followers the ``no-epoch-fencing`` bug took out of the ISR here, not
        #: through the controller: put back here once caught up
        self.unfenced_out: set[int] = set()
        self._acks = OffsetWaiters()  # acks=all produces, for the HW
        self._deletes = OffsetWaiters()  # DeleteRecords, for the low watermark
        self._data_waiters: set[asyncio.Future[None]] = set()
        self._reset_followers()
        self.maybe_advance_hw()  # a leader without followers is its own ISR

    @property
    def is_leader(self) -> bool:
        return self.assignment.leader == self.node_id

    def reassign(self, assignment: PartitionAssignment) -> None:
        """A new leader, leader epoch or ISR from the metadata log."""
        became_leader = assignment.leader == self.node_id and (
            self.assignment.leader != self.node_id
            or assignment.leader_epoch != self.assignment.leader_epoch
        )
        self.assignment = assignment
        self.unfenced_out = set()
        self.joining = {
            r: epoch
            for r, epoch in self.joining.items()
            if self.is_leader and epoch >= assignment.partition_epoch and r not in assignment.isr
        }
        if became_leader:
            self._reset_followers()
        self.maybe_advance_hw()
        if self.is_leader:
            self._deletes.reached(self.low_watermark)  # the ISR may have shrunk
        else:
            message = f"{self.topic}-{self.index} lost leadership"
            self._acks.fail(ErrorCode.not_leader_or_follower, message)
            self._deletes.fail(ErrorCode.not_leader_or_follower, message)
        self.wake()

    # -- leader --------------------------------------------------------------------------
    def shrink_isr_unfenced(self, lagging: set[int]) -> None:
        """The ``no-epoch-fencing`` bug: the leader takes lagging followers out of
        its ISR at once, on its own authority, instead of when the controller
        commits the change it checked against the leader and partition epochs.
        A leader cut off from the controller together with one follower then
        acknowledges acks=all writes that only the two of them hold, while the
        controller has already made another replica leader."""
        isr = [r for r in self.assignment.isr if r not in lagging]
        self.unfenced_out |= lagging & set(self.assignment.isr)
        self.assignment = replace(self.assignment, isr=isr)
        self.maybe_advance_hw()

    def _reset_followers(self) -> None:
        """A new leadership: followers' positions are unknown until they fetch again,
        and each counts as caught up now (the lag clock starts with the leadership)."""
        followers = [r for r in self.assignment.replicas if r != self.node_id]
        self.joining = {}
        self.follower_leo = dict.fromkeys(followers, UNKNOWN)
        self.follower_start = dict.fromkeys(followers, UNKNOWN)
        now = time.monotonic()
        self.caught_up_at = dict.fromkeys(followers, now)
        self._last_fetch = {}
        self.epoch_start_offset = self.log.next_offset
        if self.is_leader:
            self.log.epochs.assign(self.leader_epoch, self.epoch_start_offset)

    def maybe_advance_hw(self) -> None:
        """After an append or a change of leadership or ISR: followers parked in a
        fetch look again (there may be records, or an error, for them), and the
        HW may advance."""
        self._notify_data()
        self._advance_hw()

    def _advance_hw(self) -> None:
        """HW = min LEO over the maximal ISR (the ISR, the followers joining it and
        the leader's own LEO), once known, and only while the ISR is not under
        its minimum."""
        if not self.is_leader or self.under_min_isr:
            return
        leos = [self.log.next_offset]
        for replica in {*self.assignment.isr, *self.joining}:
            if replica != self.node_id:
                leos.append(self.follower_leo.get(replica, UNKNOWN))
        if UNKNOWN in leos:
            return
        self._set_hw(min(leos))

    def fetch_upper(self, read_committed: bool) -> int:
        if bugs.active("read-above-hw"):  # the log end, not the HW (the LSO still applies)
            unstable = self.log.producer_state.first_unstable_offset()
            end = self.log.next_offset
            return min(unstable, end) if read_committed and unstable is not None else end
        return super().fetch_upper(read_committed)

    def update_follower(
        self, replica: int, fetch_offset: int, log_start: int = UNKNOWN, now: float | None = None
    ) -> None:
        """A follower fetched from ``fetch_offset``: everything before it is on its log,
        which starts at ``log_start``."""
        if replica not in self.follower_leo:
            return
        self.follower_start[replica] = log_start
        if self._deletes:
            self._deletes.reached(self.low_watermark)
        now = time.monotonic() if now is None else now
        leader_leo = self.log.next_offset
        if fetch_offset >= leader_leo:
            self.caught_up_at[replica] = now
        elif replica in self._last_fetch and fetch_offset >= self._last_fetch[replica][1]:
            self.caught_up_at[replica] = self._last_fetch[replica][0]
        self._last_fetch[replica] = (now, leader_leo)
        leo = self.follower_leo[replica] = min(fetch_offset, leader_leo)
        # A follower's position is no news for the others parked in a fetch, nor
        # is the HW it may advance: as in Kafka's DelayedFetch, a follower's fetch
        # completes on records, an error, a diverging epoch or a log start past
        # its own, and learns the HW with its next answer. Waking them here only
        # had each read all its partitions again and park. A HW at the log end
        # has nowhere to go: so it is for every idle partition of a session,
        # each of which a follower's every fetch reports on.
        if self.high_watermark < leader_leo:
            self._advance_hw()
        caught_up = leo >= self.high_watermark and leo >= self.epoch_start_offset
        if caught_up and replica in self.unfenced_out:  # the committed ISR never lost it
            self.unfenced_out.discard(replica)
            self.assignment = replace(self.assignment, isr=[*self.assignment.isr, replica])
            return
        outside = replica not in self.assignment.isr and replica not in self.joining
        propose = self.on_caught_up
        if caught_up and outside and propose is not None and propose(self, replica):
            self.joining[replica] = self.assignment.partition_epoch  # proposed

    def expansion_refused(self, replica: int) -> None:
        """The controller refused ``replica``'s ISR expansion outright: the HW
        counts the ISR alone again (the follower is proposed anew once it
        fetches caught up)."""
        self.joining.pop(replica, None)
        self.maybe_advance_hw()

    @property
    def low_watermark(self) -> int:
        """Kafka's lowWatermarkIfLeader, over the ISR: the smallest log start offset
        of the in-sync replicas (-1 while a follower has not reported its own)."""
        isr = self.assignment.isr
        starts = [self.follower_start.get(r, UNKNOWN) for r in isr if r != self.node_id]
        return min([self.log.log_start_offset, *starts])

    def log_start_raised(self) -> None:
        """Followers parked in a fetch answer at once with the new log start, so
        that they adopt it and report theirs without waiting out the fetch."""
        self._notify_data()
        self._deletes.reached(self.low_watermark)

    async def wait_low_watermark(self, offset: int, timeout_s: float) -> int:
        """Kafka's DelayedDeleteRecords: the low watermark once it reaches
        ``offset``; REQUEST_TIMED_OUT after ``timeout_s``, NOT_LEADER_OR_FOLLOWER
        if the leadership is lost meanwhile."""
        if not self.is_leader:
            raise KafkaError(ErrorCode.not_leader_or_follower, f"{self.topic}-{self.index}")
        if self.low_watermark >= offset:
            return self.low_watermark
        reached = await self._deletes.wait(offset, timeout_s)
        if reached is None:
            raise KafkaError(
                ErrorCode.request_timed_out, f"low watermark {self.low_watermark} < {offset}"
            )
        return reached

    def lagging(self, lag_ms: int, now: float | None = None) -> list[int]:
        """ISR followers not caught up to the LEO for more than ``lag_ms``: the leader
        asks the controller to take them out of the ISR."""
        if not self.is_leader:
            return []
        now = time.monotonic() if now is None else now
        return [
            r
            for r in self.assignment.isr
            if r != self.node_id and (now - self.caught_up_at.get(r, now)) * 1000 > lag_ms
        ]

    def check_latest_available(self) -> None:
        """KIP-207: a new leader whose HW has not reached the start of its epoch may
        be behind the previous leader's HW; the latest offset is not known yet."""
        if self.is_leader and self.high_watermark < self.epoch_start_offset:
            raise KafkaError(
                ErrorCode.offset_not_available,
                f"{self.topic}-{self.index}: HW {self.high_watermark} below the epoch's "
                f"start {self.epoch_start_offset}",
            )

    async def wait_replicated(self, end_offset: int, timeout_s: float = ACK_TIMEOUT_S) -> None:
        """acks=all: returns once the HW reaches ``end_offset``; raises
        REQUEST_TIMED_OUT after ``timeout_s``, NOT_ENOUGH_REPLICAS_AFTER_APPEND
        if the ISR is under its minimum then (it rarely is: the HW stands
        still under it)."""
        if bugs.active("early-ack"):
            return
        if not self.is_leader:
            raise KafkaError(ErrorCode.not_leader_or_follower, f"{self.topic}-{self.index}")
        if (
            self.high_watermark < end_offset
            and await self._acks.wait(end_offset, timeout_s) is None
        ):
            raise KafkaError(
                ErrorCode.request_timed_out, f"HW {self.high_watermark} < {end_offset}"
            )
        if self.under_min_isr:
            min_isr = self.log.config["min.insync.replicas"]
            raise KafkaError(
                ErrorCode.not_enough_replicas_after_append,
                f"ISR {self.assignment.isr} < min.insync.replicas={min_isr}",
            )

    def _set_hw(self, hw: int) -> None:
        if hw <= self.high_watermark:
            return
        self.high_watermark = hw
        self.log.producer_state.on_high_watermark(hw)
        self._acks.reached(hw)
        self.wake()

    # -- follower ------------------------------------------------------------------------
    def append_as_follower(self, data: bytes, leader_hw: int, leader_start: int = UNKNOWN) -> None:
        """Appends batches copied from the leader with their offsets and epochs, then
        takes its HW and, once the HW has reached it, its log start offset (Kafka's
        follower maybeIncrementLogStartOffset)."""
        if data:
            self.log.append_replicated(bytearray(data))
        self.follower_hw(leader_hw)
        if leader_start <= self.high_watermark:
            self.log.maybe_increment_log_start_offset(leader_start)

    def follower_hw(self, leader_hw: int) -> None:
        hw = min(leader_hw, self.log.next_offset)
        if hw > self.high_watermark:
            self.high_watermark = hw
            self.log.producer_state.on_high_watermark(hw)
            self.wake()

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """A follower behind its leader's log start starts over there."""
        self.log.truncate_fully_and_start_at(offset)
        self.high_watermark = offset
        self.log.producer_state.on_high_watermark(offset)

    def truncate_to(self, offset: int) -> None:
        """Only followers truncate: to where their log agrees with the leader's."""
        self.log.truncate_to(offset)
        self.high_watermark = min(self.high_watermark, self.log.next_offset)
        self.log.producer_state.on_high_watermark(self.high_watermark)

    # -- waiting for data (follower fetches on the leader) -------------------------------
    def watch_data(self, waiter: asyncio.Future[None]) -> None:
        self._data_waiters.add(waiter)

    def unwatch_data(self, waiter: asyncio.Future[None]) -> None:
        self._data_waiters.discard(waiter)

    def _notify_data(self) -> None:
        for waiter in self._data_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._data_waiters.clear()


class OffsetWaiters:
    """Requests parked until an offset of the partition reaches theirs (Kafka's
    purgatories): acks=all produces on the HW, DeleteRecords on the low watermark."""

    def __init__(self) -> None:
        self._waiting: list[tuple[int, asyncio.Future[int]]] = []

    def __bool__(self) -> bool:
        """Whether any request waits."""
        return bool(self._waiting)

    async def wait(self, target: int, timeout_s: float) -> int | None:
        """The offset once ``reached`` gives one at or past ``target``; None after
        ``timeout_s``; raises the error ``fail`` gives."""
        waiter: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiting.append((target, waiter))
        # asyncio.wait, not wait_for, which on 3.11 can swallow a racing cancellation
        done, _ = await asyncio.wait([waiter], timeout=timeout_s)
        if not done:
            waiter.cancel()
            self._waiting = [(t, w) for t, w in self._waiting if w is not waiter]
            return None
        return waiter.result()

    def reached(self, offset: int) -> None:
        done = [w for target, w in self._waiting if target <= offset]
        self._waiting = [(target, w) for target, w in self._waiting if target > offset]
        for waiter in done:
            if not waiter.done():
                waiter.set_result(offset)

    def fail(self, code: ErrorCode, message: str) -> None:
        waiting, self._waiting = self._waiting, []
        for _, waiter in waiting:
            if not waiter.done():
                waiter.set_exception(KafkaError(code, message))


def end_offset_for_epoch(log: Log, epoch: int) -> tuple[int, int]:
    """KIP-101's answer from the partition's leader-epoch cache: the largest leader
    epoch <= ``epoch`` and the offset where it ends (see ``LeaderEpochCache``)."""
    return log.epochs.end_offset_for(epoch, log.next_offset)


def diverging_epoch(log: Log, fetch_offset: int, last_fetched_epoch: int) -> tuple[int, int] | None:
    """Leader side of a follower's fetch (Kafka's Partition.fetchRecords): the
    (epoch, end offset) where the follower's log leaves ours, when its last
    fetched epoch ends earlier here than its fetch offset or is unknown here;
    None when its log is a prefix of ours (or it sent no epoch). An epoch newer
    than all of ours, which a follower of the current leader epoch cannot
    have, is OFFSET_OUT_OF_RANGE."""
    if last_fetched_epoch < 0:
        return None
    epoch, end = end_offset_for_epoch(log, last_fetched_epoch)
    if epoch < 0:
        raise KafkaError(
            ErrorCode.offset_out_of_range, f"epoch {last_fetched_epoch} is unknown here"
        )
    if epoch < last_fetched_epoch or end < fetch_offset:
        return epoch, end
    return None


def truncation_offset(
    partition: ReplicatedPartition, asked_epoch: int, leader_epoch: int, leader_end: int
) -> int:
    """Follower side: where our log agrees with the leader's, from the leader's
    (epoch, end offset) for ``asked_epoch`` (an OffsetsForLeaderEpoch answer or a
    fetch's diverging epoch; KIP-101 and KIP-279)."""
    log = partition.log
    if asked_epoch < 0:
        return log.next_offset  # nothing of ours to reconcile
    if leader_epoch < 0:
        return partition.high_watermark  # the leader knows no epoch of ours
    if leader_epoch != asked_epoch:
        # the leader lacks our epoch; its answer is for an older one, where our
        # log may end earlier than the leader's
        _, ours = end_offset_for_epoch(log, leader_epoch)
        return min(leader_end, ours, log.next_offset)
    return min(leader_end, log.next_offset)
