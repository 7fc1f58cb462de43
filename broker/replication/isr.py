"""ISR changes a partition leader asks of the controller (Kafka's
``AlterPartitionManager``): expansion when a follower catches up, shrink when an
ISR follower has not been caught up for ``replica.lag.time.max.ms``.

One AlterPartition is in flight at a time, carrying every partition's pending change,
each built from the committed metadata image (leader epoch, partition epoch, ISR);
the new ISR takes effect only when the controller's record comes back through the
metadata log, so the HW keeps counting a follower being removed until the removal is
committed, and counts a follower being added from the proposal on (the partition's
``joining``). An expansion the controller refuses outright ends there; one it did
not answer is sent again until it is decided (as Kafka's AlterPartitionManager
retries), since it may have been committed all the same."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from broker import bugs
from broker.errors import ErrorCode
from broker.replication import controller_apis as apis
from broker.replication.controller_channel import ControllerUnavailable
from broker.replication.partition import ReplicatedPartition

log = logging.getLogger(__name__)
TopicPartition = tuple[str, int]


IsrChange = Callable[[tuple[int, ...]], tuple[int, ...]]
#: a queued change: its partition, the change, and the follower it adds (if any)
Proposal = tuple[ReplicatedPartition, IsrChange, int | None]
#: answers after which a change may still be committed (the request raced an
#: earlier copy of itself, or another change): the metadata will tell
UNDECIDED = frozenset({ErrorCode.none, ErrorCode.invalid_update_version})
RETRY_S = 0.5


def _without(out: set[int]) -> IsrChange:
    return lambda isr: tuple(r for r in isr if r not in out)


class IsrManager:
    def __init__(
        self,
        node_id: int,
        partitions: dict[TopicPartition, Any],
        image: Callable[[], Any],
        broker_epoch: Callable[[], int],
        call_controller: Callable[[Any, float], Awaitable[Any]],
        lag_ms: int,
    ) -> None:
        """``image`` gives the current metadata image, ``call_controller`` sends a
        request to the active controller (raising ``ControllerUnavailable``)."""
        self.node_id = node_id
        self.partitions = partitions
        self.image = image
        self.broker_epoch = broker_epoch
        self.call_controller = call_controller
        self.lag_ms = lag_ms
        self._pending: dict[TopicPartition, Proposal] = {}
        self._inflight: set[TopicPartition] = set()
        self._sender: asyncio.Task[None] | None = None

    def expand(self, partition: ReplicatedPartition, replica: int) -> bool:
        """``replica`` caught up: proposes it back into the ISR; False when another
        change of the partition is queued or in flight (it is proposed again later)."""
        return self._propose(
            partition, lambda isr: isr if replica in isr else (*isr, replica), replica
        )

    def shrink_lagging(self) -> None:
        """Proposes, for every partition led here, an ISR without its lagging followers."""
        for partition in list(self.partitions.values()):
            if isinstance(partition, ReplicatedPartition):
                lagging = set(partition.lagging(self.lag_ms))
                if lagging:
                    if bugs.active("no-epoch-fencing"):
                        partition.shrink_isr_unfenced(lagging)
                    self._propose(partition, _without(lagging), None)

    async def run(self) -> None:
        """Checks for lagging followers every half lag time (as Kafka does)."""
        while True:
            await asyncio.sleep(self.lag_ms / 2000)
            try:
                self.shrink_lagging()
            except Exception:  # a bug here must not end the checks
                log.exception("ISR shrink check failed")

    def _propose(
        self, partition: ReplicatedPartition, change: IsrChange, adding: int | None
    ) -> bool:
        """Queues a change (one per partition); one AlterPartition is in flight at a
        time, and it carries every change queued meanwhile (a restarted follower
        catching up on all its partitions costs one metadata commit, not one per
        partition). Returns whether the change was queued."""
        tp = (partition.topic, partition.index)
        if tp in self._pending or tp in self._inflight:
            return False
        self._pending[tp] = (partition, change, adding)
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._send_pending())
        return True

    async def _send_pending(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, {}
            self._inflight = set(batch)
            try:
                await self._alter(list(batch.values()))
            finally:
                self._inflight = set()

    def _item(
        self, image: Any, partition: ReplicatedPartition, change: IsrChange
    ) -> apis.IsrItem | None:
        """The change as asked of the controller, from the committed image; None
        when there is nothing to ask (led elsewhere now, or the ISR is already so)."""
        topic = image.topic(partition.topic)
        reg = None if topic is None else topic.partitions.get(partition.index)
        if topic is None or reg is None or reg.leader != self.node_id:
            return None
        isr = tuple(reg.isr)
        new_isr = change(isr)
        if new_isr == isr:
            return None
        return apis.IsrItem(
            partition.topic, topic.topic_id, partition.index, reg.leader_epoch,
            reg.partition_epoch, isr, new_isr,
        )  # fmt: skip

    async def _alter(self, changes: list[Proposal]) -> None:
        image = self.image()
        items: list[apis.IsrItem] = []
        sent: dict[tuple[str, int], Proposal] = {}
        for proposal in changes:
            item = self._item(image, *proposal[:2])
            if item is not None:  # else led elsewhere now, or so already: the metadata settles it
                items.append(item)
                sent[(item.topic_id, item.partition)] = proposal
        if not items:
            return
        request = apis.alter_partition_request(self.node_id, self.broker_epoch(), items)
        try:
            answer = await self.call_controller(request, 5)
        except ControllerUnavailable as e:
            for item in items:
                log.info("ISR change of %s to %s: %s", item.name, list(item.new_isr), e)
            self._retry(list(sent.values()))
            return
        codes = {
            (t.topic_id, p.partition_index): p.error_code
            for t in answer.topics
            for p in t.partitions
        }
        unanswered = []
        for item in items:
            code = codes.get((uuid.UUID(item.topic_id), item.partition))
            outcome = "no answer" if code is None else code.name
            partition, _, added = proposal = sent[(item.topic_id, item.partition)]
            if code is None:
                unanswered.append(proposal)
            elif added is not None and code not in UNDECIDED:
                partition.expansion_refused(added)
            log.info(
                "ISR change of %s from %s to %s: %s",
                item.name, list(item.isr), list(item.new_isr), outcome,
            )  # fmt: skip
        self._retry(unanswered)

    def _retry(self, proposals: list[Proposal]) -> None:
        """Sends the expansions whose fate is unknown again after a pause (the
        partition keeps counting their followers meanwhile); shrinks are
        proposed anew by the next lag check anyway."""
        if any(added is not None for *_, added in proposals):
            asyncio.get_running_loop().call_later(RETRY_S, self._requeue, proposals)

    def _requeue(self, proposals: list[Proposal]) -> None:
        for partition, change, added in proposals:
            if added is not None and added in partition.joining:  # still undecided
                self._propose(partition, change, added)
