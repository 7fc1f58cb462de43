"""Both coordinators of one broker, wired to its replica manager.

At start the internal topics are created if missing and every partition this
node leads is loaded by replay; on one node that is all of them. Later,
replication calls :meth:`CoordinatorService.become_leader` and
:meth:`CoordinatorService.resign` as leadership of those partitions moves.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from broker.coordinator.group.coordinator import GroupCoordinator
from broker.coordinator.group.membership import GroupConfig
from broker.coordinator.partitioning import GROUP_TOPIC, CoordinatorType
from broker.coordinator.txn.coordinator import ProducerIds, TransactionCoordinator, TxnConfig
from broker.coordinator.txn.marker_sender import MarkerSender
from broker.coordinator.txn.markers import MarkerChannel
from broker.coordinator.txn.producer_id_blocks import ControllerProducerIdManager
from broker.coordinator.txn.producer_ids import ProducerIdManager
from broker.coordinator.txn.verification import TxnVerifier

if TYPE_CHECKING:
    from broker.broker import Broker

log = logging.getLogger(__name__)

INTERNAL_TOPIC_CONFIGS = {"cleanup.policy": "compact"}


class CoordinatorService:
    def __init__(self, broker: Broker) -> None:
        cfg = broker.config
        self.broker = broker
        self._marker_sender: MarkerSender | None = None
        self.verifier = TxnVerifier(broker)
        self.group = GroupCoordinator(
            GroupConfig(
                num_partitions=cfg["offsets.topic.num.partitions"],
                min_session_timeout_ms=cfg["group.min.session.timeout.ms"],
                max_session_timeout_ms=cfg["group.max.session.timeout.ms"],
                initial_rebalance_delay_ms=cfg["group.initial.rebalance.delay.ms"],
                max_size=cfg["group.max.size"],
            ),
            broker.replica_manager,
        )
        self.txn = TransactionCoordinator(
            TxnConfig(
                num_partitions=cfg["transaction.state.log.num.partitions"],
                max_timeout_ms=cfg["transaction.max.timeout.ms"],
                abort_interval_ms=cfg[
                    "transaction.abort.timed.out.transaction.cleanup.interval.ms"
                ],
            ),
            broker.replica_manager,
            self._marker_channel(),
            self._producer_ids(),
            self.group.runtime.partition_for,
        )

    def _marker_channel(self) -> MarkerChannel:
        """Markers go to each partition's leader: this node alone on a single node,
        any node of a cluster (WriteTxnMarkers)."""
        broker = self.broker
        local = (broker.node_id, broker.replica_manager, self.group.on_offsets_marker)
        if broker.cluster is None:
            return MarkerChannel(*local)
        self._marker_sender = MarkerSender(broker.node_id)
        return MarkerChannel(*local, broker.cluster.leader_address, self._marker_sender.write)

    def _producer_ids(self) -> ProducerIds:
        """A single node reserves its own blocks; a cluster node asks the controller."""
        cluster = self.broker.cluster
        if cluster is None:
            return ProducerIdManager(self.broker.ledger)
        return ControllerProducerIdManager(
            self.broker.node_id, lambda: cluster.broker_epoch, cluster.call_controller
        )

    async def start(self) -> None:
        manager = self.broker.replica_manager
        for runtime in (self.group.runtime, self.txn.runtime):
            topic = manager.ensure_internal_topic(
                runtime.topic, runtime.num_partitions, dict(INTERNAL_TOPIC_CONFIGS)
            )
            if len(topic.partitions) != runtime.num_partitions:
                # Keys must keep mapping to the partitions that hold their state.
                log.warning(
                    "%s exists with %d partitions; using those, not the configured %d",
                    runtime.topic, len(topic.partitions), runtime.num_partitions,
                )  # fmt: skip
                runtime.num_partitions = len(topic.partitions)
            for partition in range(runtime.num_partitions):
                hosted = manager.partitions.get((runtime.topic, partition))
                if hosted is not None and hosted.assignment.leader == self.broker.node_id:
                    await self.become_leader(runtime.topic, partition, hosted.leader_epoch)
        self.txn.start()

    async def stop(self) -> None:
        self.txn.stop()
        self.group.stop()
        self.verifier.close()
        if self._marker_sender is not None:
            self._marker_sender.close()

    async def become_leader(self, topic: str, partition: int, epoch: int) -> None:
        """This node now leads ``topic``-``partition``: serve its coordinator shard.

        A partition whose records cannot be replayed stays unserved (its keys
        get COORDINATOR_NOT_AVAILABLE) rather than taking the broker down, as in
        Kafka; the reason is in the broker log."""
        runtime = self.group.runtime if topic == GROUP_TOPIC else self.txn.runtime
        try:
            await runtime.load(partition, epoch)
        except ValueError as exc:
            log.error("not serving %s-%d: cannot replay it: %s", topic, partition, exc)

    def resign(self, topic: str, partition: int) -> None:
        runtime = self.group.runtime if topic == GROUP_TOPIC else self.txn.runtime
        runtime.unload(partition)

    def coordinator_for(self, key_type: CoordinatorType, key: str) -> tuple[int, str, int] | None:
        """``(node_id, host, port)`` of the coordinator for ``key``, or None if unknown.

        The single place that maps a key to a node: the leader of its internal
        partition, which on one node is this node whenever the shard is loaded."""
        runtime = self.group.runtime if key_type is CoordinatorType.GROUP else self.txn.runtime
        partition = runtime.partition_for(key)
        if runtime.owns(partition):
            return self.broker.node_id, self.broker.host, self.broker.port
        cluster = self.broker.cluster
        return None if cluster is None else cluster.leader_address(runtime.topic, partition)
