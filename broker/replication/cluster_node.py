"""One node of a combined-mode cluster: a Raft voter with its quorum controller, and
the broker-side parts that talk to whichever node is the active controller —
registration and heartbeats, forwarded topic requests, ISR changes, producer-id
blocks — plus the fetchers that replicate the partitions this node follows.

Each part is built here, once, with what it uses. The broker builds its own parts
(the coordinators, the metadata publisher) from the ones this node exposes.

Start-up blocks until the quorum has elected a controller, this broker is registered
and unfenced, and the internal topics exist (RF = min(3, N), min ISR min(2, N)), so
the coordinators find their partitions when the broker starts them."""

from __future__ import annotations

import asyncio
import random

from kio.schema.errors import ErrorCode

from broker import bugs
from broker.config import BrokerConfig, ConfigError
from broker.controller import requests as c
from broker.controller.quorum_controller import QuorumController
from broker.coordinator.service import INTERNAL_TOPIC_CONFIGS
from broker.coordinator.txn.producer_id_blocks import (
    ControllerProducerIdManager,
    handle_allocate_producer_ids,
)
from broker.log.ledger import FsyncLedger
from broker.metadata.loader import MetadataPublisher
from broker.raft.client import RaftClient, RaftConfig
from broker.raft.driver import MonotonicClock, RaftDriver, RaftMessageQueue
from broker.raft.file_log import FileLog
from broker.raft.file_quorum_store import FileQuorumStateStore
from broker.replication import controller_apis as apis
from broker.replication.controller_channel import RETRY_S, ControllerChannel
from broker.replication.controller_listener import ControllerListener, Handler
from broker.replication.fetcher import ReplicaFetchers
from broker.replication.forwarding import ForwardingManager
from broker.replication.isr import IsrManager
from broker.replication.lifecycle import BrokerLifecycleManager
from broker.replication.metadata_cache import KRaftMetadataCache
from broker.replication.raft_transport import RaftTransport
from broker.replication.voters import parse_voters
from broker.server.metadata_cache import BrokerEndpoint
from broker.server.replica_manager import ReplicaManager

METADATA_DIR = "__cluster_metadata-0"


def controller_config(config: BrokerConfig, voters: int) -> c.ControllerConfig:
    return c.ControllerConfig(
        session_timeout_ms=config["broker.session.timeout.ms"],
        disconnect_grace_ms=config["broker.session.disconnect.grace.ms"],
        default_replication_factor=min(config["default.replication.factor"], voters),
        default_partitions=config["num.partitions"],
        unclean_leader_election=config["unclean.leader.election.enable"]
        or bugs.active("unclean-election")
        or bugs.active("min-isr-ignored"),
        placement_seed=seed if (seed := config["replica.placement.seed"]) >= 0 else None,
        leader_imbalance_check_interval_ms=config["leader.imbalance.check.interval.seconds"] * 1000
        if config["auto.leader.rebalance.enable"]
        else None,
    )


class ClusterNode:
    def __init__(
        self,
        config: BrokerConfig,
        ledger: FsyncLedger,
        replica_manager: ReplicaManager,
        endpoint: BrokerEndpoint,
    ) -> None:
        node_id = config.node_id
        self.config = config
        self.topics = replica_manager.topics
        self.voters = parse_voters(config["controller.quorum.voters"])
        if node_id not in self.voters:
            raise ConfigError(f"--voters: node {node_id} is not among {sorted(self.voters)}")
        if config.port == 0:
            raise ConfigError("--listen: a cluster node needs a fixed port (its registration)")
        raft_config = RaftConfig(
            election_timeout_ms=config["controller.quorum.election.timeout.ms"],
            fetch_timeout_ms=config["controller.quorum.fetch.timeout.ms"],
            request_timeout_ms=config["controller.quorum.request.timeout.ms"],
        )
        clock, rng = MonotonicClock(), random.Random()
        queue = RaftMessageQueue()
        self.transport = RaftTransport(node_id, self.voters, raft_config.request_timeout_ms, queue)
        self.raft = raft = RaftClient(
            node_id,
            frozenset(self.voters),
            FileLog(config.data_dir / METADATA_DIR, ledger=ledger),
            FileQuorumStateStore(config.data_dir / "quorum-state", ledger),
            self.transport,
            clock,
            rng,
            raft_config,
        )
        self.controller = controller = QuorumController(
            node_id,
            raft,
            clock,
            rng,
            controller_config(config, len(self.voters)),
            peer_gone=self.transport.peer_gone,
        )
        raft.register(controller)
        self.driver = RaftDriver(raft, queue, on_tick=controller.poll)
        self.listener = ControllerListener(self._handlers(), controller.broker_disconnected)
        self.channel = ControllerChannel(node_id, self.voters, lambda: raft.leader_id)
        self.lifecycle = BrokerLifecycleManager(
            endpoint,
            config["cluster.id"],
            config["broker.heartbeat.interval.ms"],
            self.channel,
            lambda: controller.loader.image.offset,
        )
        self.metadata_cache = KRaftMetadataCache(
            node_id, controller.loader, self.topics, lambda: raft.leader_id
        )
        self.forwarding = ForwardingManager(self.channel, self.topics)
        self.producer_ids = ControllerProducerIdManager(
            node_id, lambda: self.lifecycle.broker_epoch, self.channel.call
        )
        self.fetchers = ReplicaFetchers(
            node_id, replica_manager.partitions, self.metadata_cache.broker_address
        )
        self.isr = IsrManager(
            node_id,
            replica_manager.partitions,
            lambda: controller.loader.image,
            lambda: self.lifecycle.broker_epoch,
            self.channel.call,
            config["replica.lag.time.max.ms"],
        )
        self._tasks: list[asyncio.Task[None]] = []

    def _handlers(self) -> dict[int, Handler]:
        raft = self.transport.handle
        ctl = self.controller
        return {
            52: raft,  # Vote
            53: raft,  # BeginQuorumEpoch
            54: raft,  # EndQuorumEpoch
            1: raft,  # Fetch of the metadata partition
            59: raft,  # FetchSnapshot
            62: lambda r: apis.handle_registration(ctl, r),
            63: lambda r: apis.handle_heartbeat(ctl, r),
            19: lambda r: apis.handle_create_topics(ctl, r),
            56: lambda r: apis.handle_alter_partition(ctl, r),
            20: lambda r: apis.handle_delete_topics(ctl, r),
            37: lambda r: apis.handle_create_partitions(ctl, r),
            33: lambda r: apis.handle_alter_configs(ctl, r, incremental=False),
            44: lambda r: apis.handle_alter_configs(ctl, r, incremental=True),
            67: lambda r: handle_allocate_producer_ids(ctl, r),
        }

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self, publisher: MetadataPublisher) -> None:
        """Joins the quorum with ``publisher`` (the broker's) following every committed
        image, and returns once this broker is unfenced and the internal topics exist."""
        self.controller.loader.install_publisher(publisher)
        own = self.voters[self.config.node_id]
        try:
            await self.listener.start(own.host, own.port)
        except OSError as e:
            raise ConfigError(f"--voters: cannot listen on {own.host}:{own.port}: {e}") from None
        self.driver.start()
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self.lifecycle.run()), loop.create_task(self.isr.run())]
        await self.lifecycle.wait_unfenced()
        await self._ensure_internal_topics()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.fetchers.stop()
        await self.listener.stop()
        await self.driver.stop()
        await self.transport.close()
        self.channel.close()

    async def _ensure_internal_topics(self) -> None:
        config = self.config
        n = len(self.voters)
        internal = [
            ("__consumer_offsets", config["offsets.topic.num.partitions"]),
            ("__transaction_state", config["transaction.state.log.num.partitions"]),
        ]
        configs = {**INTERNAL_TOPIC_CONFIGS, "min.insync.replicas": str(min(2, n))}
        missing = [
            c.CreatableTopic(name, partitions, min(3, n), configs)
            for name, partitions in internal
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
            if missing:
                await asyncio.sleep(RETRY_S)
        while not all(name in self.topics.topics for name, _ in internal):
            await asyncio.sleep(0.02)
