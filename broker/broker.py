"""The broker process: wires storage, the ReplicaManager, API handlers,
services (coordinators) and the socket server, and runs the periodic
flush and retention tasks until SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from typing import TYPE_CHECKING, Any

from broker.api.registry import SERVICES, load_handlers
from broker.config import BrokerConfig, ConfigError
from broker.log.ledger import FsyncLedger, fsync_dir
from broker.network.metrics import RequestMetrics
from broker.network.server import SocketServer
from broker.server.replica_manager import ReplicaManager
from broker.server.topics import TopicStore

if TYPE_CHECKING:
    from broker.replication.cluster_node import ClusterNode

log = logging.getLogger(__name__)
CLEAN_SHUTDOWN_FILE = ".clean_shutdown"


class Broker:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.node_id = config.node_id
        self.handlers = load_handlers()
        self.ledger = FsyncLedger(config.data_dir)
        self.topics = TopicStore(config.data_dir, self.ledger)
        self.replica_manager = ReplicaManager(config, self.ledger, self.topics)
        self.cluster: ClusterNode | None = None
        if config["controller.quorum.voters"]:
            from broker.replication.cluster_node import ClusterNode

            self.cluster = ClusterNode(self)
        self.services: dict[str, Any] = {}
        self.server = SocketServer(self)
        self.request_metrics = RequestMetrics()
        self.port = config.port
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = asyncio.Event()

    @property
    def host(self) -> str:
        return self.config.advertised_host

    def api_version_entries(self) -> list[dict[str, int]]:
        return [
            {"api_key": s.api_key, "min_version": s.min_version, "max_version": s.max_version}
            for s in sorted(self.handlers.values(), key=lambda s: s.api_key)
        ]

    def cluster_brokers(self) -> list[tuple[int, str, int]]:
        """``(node_id, host, port)`` of every live broker a client may use."""
        if self.cluster is None:
            return [(self.node_id, self.host, self.port)]
        return self.cluster.brokers()

    def controller_id(self) -> int:
        return self.node_id if self.cluster is None else self.cluster.controller_id()

    async def start(self) -> None:
        marker = self.config.data_dir / CLEAN_SHUTDOWN_FILE
        clean = marker.exists()
        if clean:  # durably: a crash from here on must be recovered as unclean
            marker.unlink()
            fsync_dir(self.config.data_dir)
        self.replica_manager.open_all(clean)
        if self.cluster is not None:
            await self.cluster.start(clean)
        for name, factory in SERVICES.items():
            self.services[name] = factory(self)
            await self.services[name].start()
        if self.cluster is not None:
            self.cluster.services_started()
        try:
            self.port = await self.server.start(self.config.host, self.config.port)
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
        ]
        self._tasks = [
            asyncio.create_task(self._every(self.config[key], action)) for key, action in periodic
        ]

    async def _every(self, interval_ms: int, action: Any) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                action()
            except Exception:
                log.exception("periodic task %s failed", getattr(action, "__name__", action))

    async def stop(self) -> None:
        """Clean shutdown: stop listening, stop services, flush and close logs."""
        await self.server.stop()
        if self.cluster is not None:
            await self.cluster.stop()
        for line in self.request_metrics.summary():
            log.info(line)
        for task in self._tasks:
            task.cancel()
        for service in reversed(list(self.services.values())):
            with contextlib.suppress(Exception):
                await service.stop()
        self.replica_manager.close()
        (self.config.data_dir / CLEAN_SHUTDOWN_FILE).touch()
        self.ledger.close()

    def request_stop(self) -> None:
        self._stopping.set()

    async def run_until_stopped(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop)
        await self.start()
        ready = f"jepka broker ready node_id={self.node_id} listen={self.config.host}:{self.port}"
        log.info(ready)
        print(ready, flush=True)
        await self._stopping.wait()
        log.info("shutting down")
        await self.stop()
        log.info("stopped")
