"""The broker side of one cluster node: the parts that talk to whichever node is
the active controller — registration and heartbeats, forwarded topic requests, ISR
changes, producer-id blocks — plus the fetchers that replicate the partitions this
node follows. They stand on the node's ``QuorumNode``, a voter on a combined node,
an observer on a broker-only one.

Each part is built here, once, with what it uses. The broker builds its own parts
(the coordinators, the metadata publisher) from the ones this node exposes.

Start-up blocks until the quorum has elected a controller, this broker is registered
and unfenced, and the internal topics exist, so the coordinators find their
partitions when the broker starts them."""

from __future__ import annotations

import asyncio
import logging

from kio.schema.errors import ErrorCode

from broker.config import BrokerConfig, ConfigError
from broker.controller import requests as c
from broker.coordinator.service import INTERNAL_TOPIC_CONFIGS
from broker.coordinator.txn.producer_id_blocks import ControllerProducerIdManager
from broker.metadata.loader import MetadataPublisher
from broker.replication.controller_channel import (
    FORWARDING_ATTEMPT_S,
    RETRY_S,
    ControllerChannel,
)
from broker.replication.fetcher import ReplicaFetchers
from broker.replication.forwarding import ForwardingManager
from broker.replication.isr import IsrManager
from broker.replication.lifecycle import BrokerLifecycleManager
from broker.replication.metadata_cache import KRaftMetadataCache
from broker.replication.quorum_node import QuorumNode
from broker.server.metadata_cache import BrokerEndpoint
from broker.server.replica_manager import ReplicaManager

log = logging.getLogger(__name__)


def internal_topic_settings(config: BrokerConfig, voters: int) -> tuple[int, int, int]:
    """Replication factor and min ISR of ``__consumer_offsets`` and of
    ``__transaction_state``: on combined nodes min(3, N) and min(2, N) for a
    cluster of N; with dedicated controllers, which tell nothing of the brokers'
    number, Kafka's own settings."""
    if config.is_controller:
        return min(3, voters), min(3, voters), min(2, voters)
    return (
        config["offsets.topic.replication.factor"],
        config["transaction.state.log.replication.factor"],
        config["transaction.state.log.min.isr"],
    )


class ClusterNode:
    def __init__(
        self,
        config: BrokerConfig,
        quorum: QuorumNode,
        replica_manager: ReplicaManager,
        endpoint: BrokerEndpoint,
    ) -> None:
        node_id = config.node_id
        self.config = config
        self.quorum = quorum
        self.topics = replica_manager.topics
        if config.port == 0:
            raise ConfigError("--listen: a cluster node needs a fixed port (its registration)")
        raft, loader = quorum.raft, quorum.loader
        self.channel = ControllerChannel(node_id, quorum.voters, lambda: raft.leader_id)
        self.lifecycle = BrokerLifecycleManager(
            endpoint,
            config["cluster.id"],
            config["broker.heartbeat.interval.ms"],
            self.channel,
            lambda: loader.image.offset,
        )
        self.metadata_cache = KRaftMetadataCache(
            node_id, loader, self.topics, lambda: raft.leader_id
        )
        self.forwarding_channel = ControllerChannel(
            node_id, quorum.voters, lambda: raft.leader_id, FORWARDING_ATTEMPT_S
        )
        self.forwarding = ForwardingManager(self.forwarding_channel, self.topics, self.channel)
        self.producer_ids = ControllerProducerIdManager(
            node_id, lambda: self.lifecycle.broker_epoch, self.channel.call
        )
        self.fetchers = ReplicaFetchers(
            node_id, replica_manager.partitions, self.metadata_cache.broker_address
        )
        self.isr = IsrManager(
            node_id,
            replica_manager.partitions,
            lambda: loader.image,
            lambda: self.lifecycle.broker_epoch,
            self.channel.call,
            config["replica.lag.time.max.ms"],
        )
        self._tasks: list[asyncio.Task[None]] = []

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self, publisher: MetadataPublisher) -> None:
        """Joins the quorum with ``publisher`` (the broker's) following every committed
        image, and returns once this broker is unfenced and the internal topics exist."""
        self.quorum.loader.install_publisher(publisher)
        await self.quorum.start()
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self.lifecycle.run()), loop.create_task(self.isr.run())]
        await self.lifecycle.wait_unfenced()
        await self._ensure_internal_topics()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.fetchers.stop()
        await self.quorum.stop()
        self.channel.close()
        self.forwarding_channel.close()

    async def _ensure_internal_topics(self) -> None:
        config = self.config
        offsets_rf, txn_rf, txn_min_isr = internal_topic_settings(config, len(self.quorum.voters))
        internal = [
            ("__consumer_offsets", config["offsets.topic.num.partitions"], offsets_rf),
            ("__transaction_state", config["transaction.state.log.num.partitions"], txn_rf),
        ]
        configs = {**INTERNAL_TOPIC_CONFIGS, "min.insync.replicas": str(txn_min_isr)}
        missing = [
            c.CreatableTopic(name, partitions, rf, configs)
            for name, partitions, rf in internal
            if name not in self.topics.topics
        ]
        while missing:
            answer = await self.forwarding.create_topics(missing, timeout=3600)
            done = {
                r.name
                for r in answer.topics
                if r.error_code in (ErrorCode.none, ErrorCode.topic_already_exists)
            }
            missing = [t for t in missing if t.name not in done]
            for refused in (r for r in answer.topics if r.name not in done):
                log.warning(
                    "creating %s: %s %s (trying again)",
                    refused.name, refused.error_code.name, refused.error_message or "",
                )  # fmt: skip
            if missing:
                await asyncio.sleep(RETRY_S)
        while not all(name in self.topics.topics for name, _, _ in internal):
            await asyncio.sleep(0.02)
