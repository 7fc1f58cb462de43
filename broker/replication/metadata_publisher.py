"""Applies each committed metadata image to the broker (KRaft's
``BrokerMetadataPublisher``): the topic table the APIs answer from, the local
replicas (opened, re-assigned with their new leader and epoch, or deleted) and the
coordinators, which follow the leadership of their internal partitions.

With the ``hw-truncation`` bug a replica recovered at start first cuts its log to
its checkpointed HW, whatever its role (the pre-KIP-101 rule on restart)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from broker import bugs
from broker.config import BrokerConfig, topic_config
from broker.coordinator.service import CoordinatorService
from broker.metadata.image import MetadataDelta, MetadataImage
from broker.replication.partition import CaughtUp, ReplicatedPartition
from broker.server.replica_manager import ReplicaManager
from broker.server.topics import INTERNAL_TOPICS, PartitionAssignment, TopicInfo

log = logging.getLogger(__name__)
TopicPartition = tuple[str, int]


def topic_table(image: MetadataImage) -> dict[str, TopicInfo]:
    """The image's topics in the broker's own ``TopicInfo`` form."""
    table = {}
    for topic in image.topics.values():
        assignments = [
            PartitionAssignment(
                list(p.replicas), p.leader, p.leader_epoch, list(p.isr), p.partition_epoch
            )
            for _, p in sorted(topic.partitions.items())
        ]
        configs = dict(image.configs.get(("topic", topic.name), {}))
        table[topic.name] = TopicInfo(topic.name, topic.topic_id, assignments, configs)
    return table


class BrokerMetadataPublisher:
    def __init__(
        self,
        config: BrokerConfig,
        replica_manager: ReplicaManager,
        coordinators: CoordinatorService,
        on_replicas_changed: Callable[[], None],
        on_caught_up: CaughtUp,
        clean_start: bool,
    ) -> None:
        """``on_replicas_changed`` is told after the local replicas changed (the
        fetchers follow the new leaders), ``on_caught_up`` is each new replica's ISR
        expansion hook; ``clean_start`` says whether the last shutdown was clean, so
        logs opened here recover accordingly."""
        self.config = config
        self.replica_manager = replica_manager
        self.coordinators = coordinators
        self.on_replicas_changed = on_replicas_changed
        self.on_caught_up = on_caught_up
        self.clean_start = clean_start
        self.image: MetadataImage | None = None
        self.coordinators_ready = False
        self._coordinated: dict[TopicPartition, int] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        self.image = image
        table = topic_table(image)
        topics = self.replica_manager.topics.topics
        topics.clear()
        topics.update(table)
        self._apply_replicas(table)
        if self.coordinators_ready:
            self.follow_coordinators()

    def _apply_replicas(self, table: dict[str, TopicInfo]) -> None:
        node = self.config.node_id
        wanted = {
            (t.name, i): (t, a)
            for t in table.values()
            for i, a in enumerate(t.partitions)
            if node in a.replicas
        }
        try:
            self._host(wanted)
        finally:  # the fetchers follow whatever got applied, even when a log fails to open
            self.on_replicas_changed()

    def _host(self, wanted: dict[TopicPartition, tuple[TopicInfo, PartitionAssignment]]) -> None:
        """Deletes the local replicas not ``wanted``, opens the new ones and hands the
        others their new assignment and topic settings."""
        node = self.config.node_id
        manager = self.replica_manager
        for tp in [tp for tp in manager.partitions if tp not in wanted]:
            gone = manager.partitions.pop(tp)
            gone.log.delete()
            gone.wake()
            log.info("deleted replica %s-%d", *tp)
        settings_of: dict[str, dict[str, Any]] = {}  # each topic's, worked out once
        for tp, (topic, assignment) in wanted.items():
            partition = manager.partitions.get(tp)
            if topic.name not in settings_of:
                settings_of[topic.name] = topic_config(self.config, topic.configs)
            settings = settings_of[topic.name]
            if partition is None:
                plog = manager.open_log(tp, settings, self.clean_start)
                hw = manager.recovered_hws.get(tp, 0)
                if bugs.active("hw-truncation") and hw < plog.next_offset:
                    # pre-KIP-101 (M-7.1): a restarted replica cannot tell whether its
                    # records above the checkpointed HW were committed and cuts them
                    log.info("truncating %s-%d from %d to its HW %d", *tp, plog.next_offset, hw)
                    plog.truncate_to(hw)
                manager.partitions[tp] = ReplicatedPartition(
                    tp[0], tp[1], plog, assignment, node, hw, self.on_caught_up
                )
            else:
                if partition.assignment != assignment:
                    partition.reassign(assignment)
                if partition.log.config != settings:
                    partition.log.config = settings

    def coordinators_started(self) -> None:
        """The coordinators loaded what this node leads at start; later changes follow."""
        self._coordinated = self._led_internal()
        self.coordinators_ready = True
        self.follow_coordinators()

    def _led_internal(self) -> dict[TopicPartition, int]:
        node = self.config.node_id
        topics = self.replica_manager.topics.topics
        return {
            (name, index): a.leader_epoch
            for name in INTERNAL_TOPICS
            if (topic := topics.get(name)) is not None
            for index, a in enumerate(topic.partitions)
            if a.leader == node
        }

    def follow_coordinators(self) -> None:
        """Loads the coordinator shard of every internal partition led here, at its
        leader epoch, and unloads those led elsewhere now."""
        led = self._led_internal()
        for tp in [tp for tp in self._coordinated if tp not in led]:
            del self._coordinated[tp]
            self.coordinators.resign(*tp)
        for tp, epoch in led.items():
            if self._coordinated.get(tp) != epoch:
                self._coordinated[tp] = epoch
                load = self.coordinators.become_leader(*tp, epoch)
                task = asyncio.get_running_loop().create_task(load)
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
