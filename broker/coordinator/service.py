"""Both coordinators of one broker as their internal partitions see them.

At start the internal topics are created if missing and every partition this
node leads is loaded by replay; on one node that is all of them. Later,
replication calls :meth:`CoordinatorService.become_leader` and
:meth:`CoordinatorService.resign` as leadership of those partitions moves. The
broker builds the two coordinators (from :func:`group_config` and
:func:`txn_config`) and hands them in.
"""

from __future__ import annotations

import logging

from broker.config import BrokerConfig
from broker.coordinator.group.coordinator import GroupCoordinator
from broker.coordinator.group.membership import GroupConfig
from broker.coordinator.partitioning import GROUP_TOPIC, CoordinatorType
from broker.coordinator.txn.coordinator import TransactionCoordinator, TxnConfig
from broker.coordinator.txn.markers import LeaderOf
from broker.server.metadata_cache import BrokerEndpoint, Node
from broker.server.replica_manager import ReplicaManager

log = logging.getLogger(__name__)

INTERNAL_TOPIC_CONFIGS = {"cleanup.policy": "compact"}


def group_config(config: BrokerConfig) -> GroupConfig:
    return GroupConfig(
        num_partitions=config["offsets.topic.num.partitions"],
        min_session_timeout_ms=config["group.min.session.timeout.ms"],
        max_session_timeout_ms=config["group.max.session.timeout.ms"],
        initial_rebalance_delay_ms=config["group.initial.rebalance.delay.ms"],
        max_size=config["group.max.size"],
    )


def txn_config(config: BrokerConfig) -> TxnConfig:
    return TxnConfig(
        num_partitions=config["transaction.state.log.num.partitions"],
        max_timeout_ms=config["transaction.max.timeout.ms"],
        abort_interval_ms=config["transaction.abort.timed.out.transaction.cleanup.interval.ms"],
    )


class CoordinatorService:
    def __init__(
        self,
        endpoint: BrokerEndpoint,
        replica_manager: ReplicaManager,
        group: GroupCoordinator,
        txn: TransactionCoordinator,
        leader_of: LeaderOf | None,
    ) -> None:
        """``leader_of`` finds another node's internal partition for FindCoordinator;
        None on a single node, where there is no other."""
        self._endpoint = endpoint
        self._replica_manager = replica_manager
        self.group = group
        self.txn = txn
        self._leader_of = leader_of

    async def start(self) -> None:
        manager = self._replica_manager
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
                if hosted is not None and hosted.assignment.leader == self._endpoint.node_id:
                    await self.become_leader(runtime.topic, partition, hosted.leader_epoch)
        self.txn.start()

    async def stop(self) -> None:
        self.txn.stop()
        self.group.stop()

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

    def coordinator_for(self, key_type: CoordinatorType, key: str) -> Node | None:
        """``(node_id, host, port)`` of the coordinator for ``key``, or None if unknown.

        The single place that maps a key to a node: the leader of its internal
        partition, which on one node is this node whenever the shard is loaded."""
        runtime = self.group.runtime if key_type is CoordinatorType.GROUP else self.txn.runtime
        partition = runtime.partition_for(key)
        if runtime.owns(partition):
            return self._endpoint.node()
        return None if self._leader_of is None else self._leader_of(runtime.topic, partition)
