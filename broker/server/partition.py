"""One partition as its leader sees it: the log plus the high watermark, the
last stable offset, the ISR and waiters for new data (Kafka's ``Partition``).

On a single node the ISR is this node alone and the high watermark follows
the log end offset on every append; replication replaces ``maybe_advance_hw``
with the minimum log end offset of the ISR.
"""

from __future__ import annotations

import asyncio

from broker import bugs
from broker.errors import ErrorCode, KafkaError
from broker.log.log import Log
from broker.server.topics import PartitionAssignment

#: how long acks=all waits when the request names no timeout (librdkafka's
#: default request.timeout.ms)
ACK_TIMEOUT_S = 30.0
#: DeleteRecords' offset for "everything below the high watermark"
HIGH_WATERMARK = -1


class Partition:
    def __init__(self, topic: str, index: int, log: Log, assignment: PartitionAssignment) -> None:
        self.topic = topic
        self.index = index
        self.log = log
        self.assignment = assignment
        self.high_watermark = log.next_offset
        self._waiters: set[asyncio.Future[None]] = set()

    @property
    def leader_epoch(self) -> int:
        return self.assignment.leader_epoch

    @property
    def isr(self) -> list[int]:
        return self.assignment.isr

    @property
    def under_min_isr(self) -> bool:
        """The committed ISR is smaller than min.insync.replicas, or than the
        replica count when that is smaller (Kafka's effective min ISR)."""
        if bugs.active("min-isr-ignored"):
            return False
        minimum = min(self.log.config["min.insync.replicas"], len(self.assignment.replicas))
        return len(self.assignment.isr) < minimum

    @property
    def last_stable_offset(self) -> int:
        unstable = self.log.producer_state.first_unsettled_offset(self.high_watermark)
        if unstable is None:
            return self.high_watermark
        if bugs.active("lso-off-by-one"):
            unstable += 1  # one past the open transaction's first offset
        # a transaction begun below the log start is unstable from there on (Kafka)
        return min(max(unstable, self.log.log_start_offset), self.high_watermark)

    def check_leader_epoch(self, epoch: int) -> None:
        """KIP-320: a client's view of the leader epoch must match ours (-1: unchecked)."""
        if epoch == -1 or epoch == self.leader_epoch:
            return
        if epoch < self.leader_epoch:
            raise KafkaError(ErrorCode.fenced_leader_epoch, f"epoch {epoch} < {self.leader_epoch}")
        raise KafkaError(ErrorCode.unknown_leader_epoch, f"epoch {epoch} > {self.leader_epoch}")

    def fetch_upper(self, read_committed: bool) -> int:
        """Where a consumer's fetch stops: the LSO for read_committed, else the HW."""
        return self.last_stable_offset if read_committed else self.high_watermark

    def check_latest_available(self) -> None:
        """ListOffsets(latest) can be answered (a replicated leader may not know yet)."""

    def check_leader(self, node_id: int) -> None:
        """Only the leader serves produce and consumer fetches."""
        if self.assignment.leader != node_id:
            raise KafkaError(
                ErrorCode.not_leader_or_follower,
                f"{self.topic}-{self.index} is led by {self.assignment.leader}",
            )

    async def wait_replicated(self, end_offset: int, timeout_s: float = ACK_TIMEOUT_S) -> None:
        """acks=all: on a single node everything appended is already replicated."""

    def delete_records_on_leader(self, offset: int) -> int:
        """Kafka's Partition.deleteRecordsOnLeader: raises the log start offset to
        ``offset`` (HIGH_WATERMARK: the HW), never past the HW; returns it. Only
        for logs whose cleanup policy deletes (POLICY_VIOLATION otherwise)."""
        if "delete" not in self.log.config["cleanup.policy"]:
            raise KafkaError(
                ErrorCode.policy_violation, f"{self.topic}-{self.index}: cleanup.policy forbids"
            )
        requested = self.high_watermark if offset == HIGH_WATERMARK else offset
        if not 0 <= requested <= self.high_watermark:
            raise KafkaError(
                ErrorCode.offset_out_of_range,
                f"{self.topic}-{self.index}: {requested} outside [0, HW {self.high_watermark}]",
            )
        if self.log.maybe_increment_log_start_offset(requested):
            self.log_start_raised()
        return requested

    @property
    def low_watermark(self) -> int:
        """The smallest log start offset over the in-sync replicas: on a single
        node, the log's own."""
        return self.log.log_start_offset

    def log_start_raised(self) -> None:
        """The leader raised its log start offset; a single node tells no one."""

    async def wait_low_watermark(self, offset: int, timeout_s: float) -> int:
        """DeleteRecords: on a single node the low watermark is the raised log start."""
        return self.low_watermark

    def maybe_advance_hw(self) -> None:
        """Single node: everything appended is replicated to the whole ISR."""
        if self.log.next_offset > self.high_watermark:
            self.high_watermark = self.log.next_offset
            self.log.producer_state.on_high_watermark(self.high_watermark)
            self.wake()

    def wake(self) -> None:
        """Completes fetches waiting on this partition (the fetch purgatory's trigger)."""
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    def watch(self, waiter: asyncio.Future[None]) -> None:
        self._waiters.add(waiter)

    def unwatch(self, waiter: asyncio.Future[None]) -> None:
        self._waiters.discard(waiter)
