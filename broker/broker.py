"""The broker process. Every part is built here, once, and handed what it uses, as
Kafka's ``BrokerServer`` does: storage and the ``ReplicaManager``; on a cluster the
node's quorum (``QuorumNode``: a voter with its controller on a combined node, an
observer on a broker-only one) and controller-facing parts (``ClusterNode``); the
group and transaction coordinators; the metadata publisher; and the socket server.
It then runs the periodic flush, retention, compaction and checkpoint tasks until
stopped."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from broker.api.context import BrokerContext
from broker.api.table import API_TABLE, api_version_entries
from broker.config import BrokerConfig, ConfigError
from broker.coordinator.group.coordinator import GroupCoordinator
from broker.coordinator.service import CoordinatorService, group_config, txn_config
from broker.coordinator.txn.coordinator import ProducerIds, TransactionCoordinator
from broker.coordinator.txn.marker_sender import MarkerSender
from broker.coordinator.txn.markers import LeaderOf, MarkerChannel
from broker.coordinator.txn.producer_ids import ProducerIdManager
from broker.coordinator.txn.verification import TxnVerifier
from broker.log.ledger import FsyncLedger, fsync_dir
from broker.network.metrics import RequestMetrics
from broker.network.server import SocketServer
from broker.replication.cluster_node import ClusterNode
from broker.replication.forwarding import ForwardingManager
from broker.replication.metadata_publisher import BrokerMetadataPublisher
from broker.replication.quorum_node import QuorumNode
from broker.server.metadata_cache import BrokerEndpoint, LocalMetadataCache, MetadataCache
from broker.server.replica_manager import ReplicaManager
from broker.server.topics import TopicStore

log = logging.getLogger(__name__)
CLEAN_SHUTDOWN_FILE = ".clean_shutdown"


class Broker:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        node_id = config.node_id
        self.clean_start = (config.data_dir / CLEAN_SHUTDOWN_FILE).exists()
        self.endpoint = BrokerEndpoint(node_id, config.advertised_host, config.port)
        self.ledger = FsyncLedger(config.data_dir)
        self.topics = TopicStore(config.data_dir, self.ledger)
        self.replica_manager = manager = ReplicaManager(config, self.ledger, self.topics)
        self.cluster: ClusterNode | None = None
        self.marker_sender: MarkerSender | None = None
        group = GroupCoordinator(group_config(config), manager)
        if config["controller.quorum.voters"]:
            quorum = QuorumNode(config, self.ledger)
            cluster = self.cluster = ClusterNode(config, quorum, manager, self.endpoint)
            metadata_cache: MetadataCache = cluster.metadata_cache
            forwarding: ForwardingManager | None = cluster.forwarding
            self.marker_sender = MarkerSender(node_id)
            leader_of: LeaderOf | None = cluster.metadata_cache.leader
            producer_ids: ProducerIds = cluster.producer_ids
            markers = MarkerChannel(
                node_id,
                manager,
                group.on_offsets_marker,
                self.topics.contains,
                leader_of,
                self.marker_sender.write,
            )
        else:
            metadata_cache = LocalMetadataCache(self.endpoint)
            forwarding = leader_of = None
            producer_ids = ProducerIdManager(self.ledger)
            markers = MarkerChannel(node_id, manager, group.on_offsets_marker, self.topics.contains)
        txn = TransactionCoordinator(
            txn_config(config), manager, markers, producer_ids, group.runtime.partition_for
        )
        self.coordinators = CoordinatorService(self.endpoint, manager, group, txn, leader_of)
        self.txn_verifier = TxnVerifier(node_id, manager, txn, self.coordinators.coordinator_for)
        self.publisher = (
            None
            if self.cluster is None
            else BrokerMetadataPublisher(
                config,
                manager,
                self.coordinators,
                self.cluster.fetchers.update,
                self.cluster.isr.expand,
                self.clean_start,
            )
        )
        context = BrokerContext(
            config,
            manager,
            self.topics,
            metadata_cache,
            self.coordinators,
            self.txn_verifier,
            forwarding,
            api_version_entries(API_TABLE),
        )
        self.request_metrics = RequestMetrics()
        self.server = SocketServer(API_TABLE, context, self.request_metrics)
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def listen(self) -> str:
        """Where clients reach it, once started."""
        return f"{self.config.host}:{self.endpoint.port}"

    async def start(self) -> None:
        if self.clean_start:  # durably: a crash from here on must be recovered as unclean
            (self.config.data_dir / CLEAN_SHUTDOWN_FILE).unlink()
            fsync_dir(self.config.data_dir)
        self.replica_manager.open_all(self.clean_start)
        if self.cluster is not None:
            assert self.publisher is not None  # built with the cluster node
            await self.cluster.start(self.publisher)
        await self.coordinators.start()
        if self.publisher is not None:
            self.publisher.coordinators_started()
        try:
            self.endpoint.port = await self.server.start(self.config.host, self.config.port)
        except OSError as e:
            raise ConfigError(
                f"cannot listen on {self.config.host}:{self.config.port}: {e}"
            ) from None
        periodic = [
            ("log.flush.scheduler.interval.ms", self.replica_manager.flush_stale),
            ("log.retention.check.interval.ms", self.replica_manager.apply_retention),
            ("log.cleaner.backoff.ms", self.replica_manager.compact_logs),
            (
                "replica.high.watermark.checkpoint.interval.ms",
                self.replica_manager.checkpoint_high_watermarks,
            ),
            (
                "log.flush.start.offset.checkpoint.interval.ms",
                self.replica_manager.checkpoint_log_start_offsets,
            ),
        ]
        self._tasks = [
            asyncio.create_task(self._every(self.config[key], action)) for key, action in periodic
        ]

    async def _every(self, interval_ms: int, action: Callable[[], object]) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                action()
            except Exception:
                log.exception("periodic task %s failed", getattr(action, "__name__", action))

    async def stop(self) -> None:
        """Clean shutdown: stop listening, leave the quorum, stop the coordinators,
        flush and close logs."""
        await self.server.stop()
        if self.cluster is not None:
            await self.cluster.stop()
        for line in self.request_metrics.summary():
            log.info(line)
        for task in self._tasks:
            task.cancel()
        # Whatever fails, every part is stopped and the logs are closed cleanly.
        with contextlib.suppress(Exception):
            await self.coordinators.stop()
        with contextlib.suppress(Exception):
            self.txn_verifier.close()
        if self.marker_sender is not None:
            with contextlib.suppress(Exception):
                self.marker_sender.close()
        self.replica_manager.close()
        (self.config.data_dir / CLEAN_SHUTDOWN_FILE).touch()
        self.ledger.close()
