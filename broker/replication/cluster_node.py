"""One node of a combined-mode cluster: a Raft voter with its quorum controller, and
a broker that registers with the active controller, heartbeats, follows the
committed metadata and forwards topic creation to the controller.

Start-up blocks until the quorum has elected a controller, this broker is registered
and unfenced, and the internal topics exist (RF = min(3, N), min ISR min(2, N)), so
the coordinators find their partitions when the broker's services start."""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from broker import bugs
from broker.config import ConfigError
from broker.controller import requests as c
from broker.controller.quorum_controller import QuorumController
from broker.coordinator.service import INTERNAL_TOPIC_CONFIGS
from broker.coordinator.txn.producer_id_blocks import handle_allocate_producer_ids
from broker.raft.client import RaftClient, RaftConfig
from broker.raft.driver import MonotonicClock, RaftDriver, RaftMessageQueue
from broker.raft.file_log import FileLog
from broker.raft.file_quorum_store import FileQuorumStateStore
from broker.replication import controller_apis as apis
from broker.replication.controller_listener import ControllerListener, Handler
from broker.replication.fetcher import ReplicaFetchers
from broker.replication.isr import ControllerUnavailable, IsrManager
from broker.replication.metadata_publisher import BrokerMetadataPublisher
from broker.replication.peer_client import PeerConnection, PeerError
from broker.replication.raft_transport import RaftTransport
from broker.replication.voters import parse_voters

if TYPE_CHECKING:
    from broker.broker import Broker

log = logging.getLogger(__name__)
METADATA_DIR = "__cluster_metadata-0"
RETRY_S = 0.1


class ClusterNode:
    def __init__(self, broker: Broker) -> None:
        config = broker.config
        self.broker = broker
        self.node_id = broker.node_id
        self.voters = parse_voters(config["controller.quorum.voters"])
        if self.node_id not in self.voters:
            raise ConfigError(f"--voters: node {self.node_id} is not among {sorted(self.voters)}")
        if config.port == 0:
            raise ConfigError("--listen: a cluster node needs a fixed port (its registration)")
        raft_config = RaftConfig(
            election_timeout_ms=config["controller.quorum.election.timeout.ms"],
            fetch_timeout_ms=config["controller.quorum.fetch.timeout.ms"],
            request_timeout_ms=config["controller.quorum.request.timeout.ms"],
        )
        clock, rng = MonotonicClock(), random.Random()
        queue = RaftMessageQueue()
        self.transport = RaftTransport(
            self.node_id, self.voters, raft_config.request_timeout_ms, queue
        )
        self.raft = RaftClient(
            self.node_id,
            frozenset(self.voters),
            FileLog(config.data_dir / METADATA_DIR, ledger=broker.ledger),
            FileQuorumStateStore(config.data_dir / "quorum-state", broker.ledger),
            self.transport,
            clock,
            rng,
            raft_config,
        )
        n = len(self.voters)
        self.controller = QuorumController(
            self.node_id,
            self.raft,
            clock,
            rng,
            c.ControllerConfig(
                session_timeout_ms=config["broker.session.timeout.ms"],
                disconnect_grace_ms=config["broker.session.disconnect.grace.ms"],
                default_replication_factor=min(config["default.replication.factor"], n),
                default_partitions=config["num.partitions"],
                unclean_leader_election=config["unclean.leader.election.enable"]
                or bugs.active("unclean-election"),
                placement_seed=seed if (seed := config["replica.placement.seed"]) >= 0 else None,
                leader_imbalance_check_interval_ms=config["leader.imbalance.check.interval.seconds"]
                * 1000
                if config["auto.leader.rebalance.enable"]
                else None,
            ),
            peer_gone=self.transport.peer_gone,
        )
        self.publisher = BrokerMetadataPublisher(broker)
        self.fetchers = ReplicaFetchers(
            self.node_id, broker.replica_manager.partitions, self.broker_address
        )
        self.publisher.on_replicas_changed = self.fetchers.update
        self.isr = IsrManager(
            self.node_id,
            broker.replica_manager.partitions,
            lambda: self.controller.loader.image,
            lambda: self.broker_epoch,
            self.call_controller,
            config["replica.lag.time.max.ms"],
        )
        self.publisher.on_caught_up = self.isr.expand
        self.raft.register(self.controller)
        self.driver = RaftDriver(self.raft, queue, on_tick=self.controller.poll)
        self.listener = ControllerListener(self._handlers(), self.controller.broker_disconnected)
        self._controllers = {
            v.node_id: PeerConnection(v.host, v.port, f"jepka-broker-{self.node_id}")
            for v in self.voters.values()
        }
        self.broker_epoch = -1
        self._incarnation = uuid.uuid4()
        self._tasks: list[asyncio.Task[None]] = []
        self._unfenced = asyncio.Event()

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
            67: lambda r: handle_allocate_producer_ids(ctl, r),
        }

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self, clean: bool) -> None:
        self.publisher.clean_start = clean
        self.controller.loader.install_publisher(self.publisher)
        own = self.voters[self.node_id]
        try:
            await self.listener.start(own.host, own.port)
        except OSError as e:
            raise ConfigError(f"--voters: cannot listen on {own.host}:{own.port}: {e}") from None
        self.driver.start()
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._register_and_heartbeat()),
            loop.create_task(self.isr.run()),
        ]
        await self._unfenced.wait()
        await self._ensure_internal_topics()

    def services_started(self) -> None:
        """The coordinators loaded what this node leads; from now on they follow the log."""
        self.publisher.coordinators_started()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.fetchers.stop()
        await self.listener.stop()
        await self.driver.stop()
        await self.transport.close()
        for peer in self._controllers.values():
            peer.close()

    async def _register_and_heartbeat(self) -> None:
        """Registers (again after STALE_BROKER_EPOCH or an unknown id) and heartbeats
        every ``broker.heartbeat.interval.ms``; the controller fences a broker whose
        heartbeats stop for the session timeout."""
        interval = self.broker.config["broker.heartbeat.interval.ms"] / 1000
        cluster_id = self.broker.config["cluster.id"]
        while True:
            try:
                if self.broker_epoch < 0:
                    request = apis.registration_request(
                        self.node_id,
                        cluster_id,
                        self._incarnation,
                        self.broker.host,
                        self.broker.port,
                    )
                    answer = await self.call_controller(request, timeout=5)
                    if answer.error_code is ErrorCode.none:
                        self.broker_epoch = answer.broker_epoch
                        log.info("registered with broker epoch %d", self.broker_epoch)
                    else:
                        log.info("registration refused: %s", answer.error_code.name)
                else:
                    offset = self.controller.loader.image.offset
                    request = apis.heartbeat_request(self.node_id, self.broker_epoch, offset)
                    answer = await self.call_controller(request, timeout=5)
                    if answer.error_code in (
                        ErrorCode.stale_broker_epoch,
                        ErrorCode.broker_id_not_registered,
                    ):
                        self.broker_epoch = -1
                        continue
                    if answer.error_code is ErrorCode.none and not answer.is_fenced:
                        self._unfenced.set()
            except ControllerUnavailable as e:
                log.info("heartbeat: %s", e)
            except Exception:  # a bug here must not silently end the heartbeats
                log.exception("broker lifecycle step failed")
            await asyncio.sleep(interval if self.broker_epoch >= 0 else RETRY_S)

    async def call_controller(self, request: Any, timeout: float) -> Any:
        """Sends ``request`` to the active controller, following leadership changes,
        until it answers with anything but NOT_CONTROLLER."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            leader = self.raft.leader_id
            if leader is not None:
                try:
                    answer = await self._controllers[leader].request(request, RETRY_S * 10)
                except PeerError as e:
                    log.debug("controller %d: %s", leader, e)
                else:
                    if getattr(answer, "error_code", None) is not ErrorCode.not_controller:
                        return answer
                    codes = {t.error_code for t in getattr(answer, "topics", ())}
                    if codes and codes != {ErrorCode.not_controller}:
                        return answer
            await asyncio.sleep(RETRY_S)
        raise ControllerUnavailable(f"no active controller answered within {timeout:g} s")

    # -- topics --------------------------------------------------------------------------
    async def create_topics(self, topics: list[c.CreatableTopic], timeout: float = 30) -> Any:
        """Forwards to the controller, then waits (up to ``timeout``) until this broker's
        metadata holds the created topics, so a client's next request sees them."""
        answer = await self.call_controller(apis.create_topics_request(topics), timeout)
        created = {r.name for r in answer.topics if r.error_code is ErrorCode.none}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not created <= set(self.broker.topics.topics) and loop.time() < deadline:
            await asyncio.sleep(0.02)
        return answer

    async def auto_create(self, name: str) -> None:
        """Asks the controller for a topic a client's Metadata request named."""
        try:
            await self.create_topics([c.CreatableTopic(name)], timeout=5)
        except ControllerUnavailable as e:
            log.info("auto-creating %s: %s", name, e)

    async def forward_create_topics(self, request: Any) -> dict[str, Any]:
        """A client's CreateTopics, answered with the controller's results."""
        topics = apis.creatable_topics(request)
        try:
            timeout = max(request.timeout.total_seconds(), 5.0)
            answer = await self.create_topics(topics, timeout)
            results = [
                {
                    "name": r.name,
                    "error_code": r.error_code,
                    "error_message": r.error_message,
                    "num_partitions": r.num_partitions,
                    "replication_factor": r.replication_factor,
                    "configs": [],
                }
                for r in answer.topics
            ]
        except ControllerUnavailable as e:
            results = [
                {"name": t.name, "error_code": ErrorCode.request_timed_out, "error_message": str(e)}
                for t in topics
            ]
        return {"throttle_time": 0, "topics": results}

    async def forward_delete_topics(self, names: list[str]) -> dict[str, Any]:
        """A client's DeleteTopics, answered with the controller's results."""
        try:
            answer = await self.call_controller(apis.delete_topics_request(names), timeout=30)
            results = [(r.name, r.error_code) for r in answer.responses]
        except ControllerUnavailable:
            results = [(n, ErrorCode.request_timed_out) for n in names]
        return {
            "throttle_time": 0,
            "responses": [{"name": n, "error_code": c, "error_message": None} for n, c in results],
        }

    async def _ensure_internal_topics(self) -> None:
        config = self.broker.config
        n = len(self.voters)
        internal = [
            ("__consumer_offsets", config["offsets.topic.num.partitions"]),
            ("__transaction_state", config["transaction.state.log.num.partitions"]),
        ]
        configs = {**INTERNAL_TOPIC_CONFIGS, "min.insync.replicas": str(min(2, n))}
        missing = [
            c.CreatableTopic(name, partitions, min(3, n), configs)
            for name, partitions in internal
            if name not in self.broker.topics.topics
        ]
        while missing:
            answer = await self.create_topics(missing, timeout=3600)
            done = {
                r.name
                for r in answer.topics
                if r.error_code in (ErrorCode.none, ErrorCode.topic_already_exists)
            }
            missing = [t for t in missing if t.name not in done]
            if missing:
                await asyncio.sleep(RETRY_S)
        while not all(name in self.broker.topics.topics for name, _ in internal):
            await asyncio.sleep(0.02)

    # -- what clients are told -----------------------------------------------------------
    def brokers(self) -> list[tuple[int, str, int]]:
        """Unfenced brokers, as Kafka's Metadata lists them."""
        image = self.controller.loader.image
        return [(b.broker_id, b.host, b.port) for b in image.brokers.values() if not b.fenced]

    def broker_address(self, broker_id: int) -> tuple[str, int] | None:
        registration = self.controller.loader.image.brokers.get(broker_id)
        return None if registration is None else (registration.host, registration.port)

    def controller_id(self) -> int:
        alive = [b for b, _, _ in self.brokers()]
        return named_controller(self.raft.leader_id, self.node_id, alive)

    def leader_address(self, topic: str, partition: int) -> tuple[int, str, int] | None:
        info = self.broker.topics.topics.get(topic)
        if info is None or partition >= len(info.partitions):
            return None
        leader = self.controller.loader.image.brokers.get(info.partitions[partition].leader)
        if leader is None or leader.fenced:
            return None
        return leader.broker_id, leader.host, leader.port


def named_controller(active: int | None, own: int, alive: list[int]) -> int:
    """What Metadata names as controller: the active controller when it is among the
    ``alive`` (unfenced) brokers this broker lists, else this broker or another listed
    one, which forward to the quorum (KRaft's brokers name an alive broker too). A
    client told of a controller missing from the broker list waits for it forever."""
    for candidate in (active, own, *alive):
        if candidate in alive:
            return candidate
    return -1
