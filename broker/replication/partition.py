"""A partition in a replicated cluster (Kafka's ``Partition`` with replication): as
leader it tracks each follower's log end offset (LEO), advances the high watermark
(HW) to the smallest LEO of the ISR — never backwards — and completes acks=all
produces waiting for it; as follower its HW is min(leader's HW, own LEO).

The ISR itself is the controller's (it comes with each metadata image): the
controller removes a broker whose session expired from every ISR, so a dead follower
stops holding the HW back after ``broker.session.timeout.ms``; a follower that has
caught up (LEO at or past the HW and the start of the current leader epoch) is
proposed back through ``on_caught_up`` (AlterPartition)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from broker import bugs
from broker.errors import ErrorCode, KafkaError
from broker.log.log import Log
from broker.server.partition import Partition
from broker.server.topics import PartitionAssignment

UNKNOWN = -1
ACK_TIMEOUT_S = 30.0  # librdkafka's default request.timeout.ms


class ReplicatedPartition(Partition):
    def __init__(
        self, topic: str, index: int, log: Log, assignment: PartitionAssignment, node_id: int
    ) -> None:
        super().__init__(topic, index, log, assignment)
        self.node_id = node_id
        # Not checkpointed: a restarted replica takes its log end (as the single node
        # does), so a coordinator reloading its partition sees its whole state; a
        # follower's is cut back by its KIP-101 truncation.
        self.follower_leo: dict[int, int] = {}
        self.epoch_start_offset = log.next_offset
        self.on_caught_up: Callable[[ReplicatedPartition, int], None] | None = None
        self._acks: list[tuple[int, asyncio.Future[None]]] = []
        self._data_waiters: set[asyncio.Future[None]] = set()
        self.deposed = False  # led an earlier epoch, another replica leads now
        self._reset_followers()

    @property
    def is_leader(self) -> bool:
        return self.assignment.leader == self.node_id

    def reassign(self, assignment: PartitionAssignment) -> None:
        """A new leader, leader epoch or ISR from the metadata log."""
        became_leader = assignment.leader == self.node_id and (
            self.assignment.leader != self.node_id
            or assignment.leader_epoch != self.assignment.leader_epoch
        )
        if assignment.leader == self.node_id:
            self.deposed = False
        elif self.is_leader:
            self.deposed = True
        self.assignment = assignment
        if became_leader:
            self._reset_followers()
        self.maybe_advance_hw()
        if not self.is_leader:
            self._fail_acks(ErrorCode.not_leader_or_follower)
        self.wake()

    # -- leader --------------------------------------------------------------------------
    def check_leader(self, node_id: int) -> None:
        if bugs.active("no-epoch-fencing") and self.deposed:
            return  # split brain: the deposed leader still takes produce requests
        super().check_leader(node_id)

    def _reset_followers(self) -> None:
        """A new leadership: followers' positions are unknown until they fetch again."""
        self.follower_leo = {r: UNKNOWN for r in self.assignment.replicas if r != self.node_id}
        self.epoch_start_offset = self.log.next_offset

    def maybe_advance_hw(self) -> None:
        """HW = min LEO over the ISR (the leader's own LEO included), once known."""
        self._notify_data()
        if not self.is_leader:
            return
        leos = [self.log.next_offset]
        for replica in self.assignment.isr:
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

    def update_follower(self, replica: int, fetch_offset: int) -> None:
        """A follower fetched from ``fetch_offset``: everything before it is on its log."""
        if replica not in self.follower_leo:
            return
        leo = self.follower_leo[replica] = min(fetch_offset, self.log.next_offset)
        self.maybe_advance_hw()
        caught_up = leo >= self.high_watermark and leo >= self.epoch_start_offset
        if caught_up and replica not in self.assignment.isr and self.on_caught_up is not None:
            self.on_caught_up(self, replica)  # ISR expansion, through the controller

    async def wait_replicated(self, end_offset: int) -> None:
        """acks=all: returns once the HW reaches ``end_offset``; raises
        NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR is below min.insync.replicas then."""
        if bugs.active("early-ack"):
            return
        if not self.is_leader:
            raise KafkaError(ErrorCode.not_leader_or_follower, f"{self.topic}-{self.index}")
        if self.high_watermark < end_offset:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._acks.append((end_offset, waiter))
            try:
                await asyncio.wait_for(waiter, ACK_TIMEOUT_S)
            except TimeoutError:
                raise KafkaError(
                    ErrorCode.request_timed_out, f"HW {self.high_watermark} < {end_offset}"
                ) from None
        min_isr = self.log.config["min.insync.replicas"]
        if len(self.assignment.isr) < min_isr:
            raise KafkaError(
                ErrorCode.not_enough_replicas_after_append,
                f"ISR {self.assignment.isr} < min.insync.replicas={min_isr}",
            )

    def _set_hw(self, hw: int) -> None:
        if hw <= self.high_watermark:
            return
        self.high_watermark = hw
        done = [w for end, w in self._acks if end <= hw]
        self._acks = [(end, w) for end, w in self._acks if end > hw]
        for waiter in done:
            if not waiter.done():
                waiter.set_result(None)
        self.wake()

    def _fail_acks(self, code: ErrorCode) -> None:
        acks, self._acks = self._acks, []
        for _, waiter in acks:
            if not waiter.done():
                waiter.set_exception(KafkaError(code, f"{self.topic}-{self.index} lost leadership"))

    # -- follower ------------------------------------------------------------------------
    def append_as_follower(self, data: bytes, leader_hw: int) -> None:
        """Appends batches copied from the leader with their offsets and epochs."""
        if data:
            self.log.append_replicated(bytearray(data))
        self.follower_hw(leader_hw)

    def follower_hw(self, leader_hw: int) -> None:
        hw = min(leader_hw, self.log.next_offset)
        if hw > self.high_watermark:
            self.high_watermark = hw
            self.wake()

    def truncate_to(self, offset: int) -> None:
        """Only followers truncate: to where their log agrees with the leader's."""
        self.log.truncate_to(offset)
        self.high_watermark = min(self.high_watermark, self.log.next_offset)

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


def end_offset_for_epoch(log: Log, epoch: int) -> tuple[int, int]:
    """KIP-101's answer: the largest leader epoch <= ``epoch`` in ``log`` and the offset
    where it ends (the start of the next epoch, or the LEO); (-1, -1) if none."""
    found, end = -1, -1
    for header, _raw in log.read_batches(log.log_start_offset, log.next_offset):
        if header.leader_epoch <= epoch:
            found, end = header.leader_epoch, header.next_offset
        elif found >= 0:
            return found, header.base_offset
        else:
            return -1, -1
    return found, end if found >= 0 else -1
