"""This node's part of the metadata quorum (Kafka's ``SharedServer`` with, on a
controller, its ``ControllerServer``): the Raft client over the network and the
metadata loader that follows the committed log.

A controller (``process.roles`` with ``controller``) is a voter: it runs the
``QuorumController`` and listens on its address in ``controller.quorum.voters`` for
Raft traffic and the controller APIs brokers call. A broker-only node is an
observer: it fetches the log from the quorum's leader without voting and has no
controller listener, as in KRaft."""

from __future__ import annotations

import random

from broker import bugs
from broker.config import BrokerConfig, ConfigError
from broker.controller import requests as c
from broker.controller.quorum_controller import QuorumController
from broker.coordinator.txn.producer_id_blocks import handle_allocate_producer_ids
from broker.log.ledger import FsyncLedger
from broker.metadata.loader import MetadataLoader
from broker.raft.client import RaftClient, RaftConfig
from broker.raft.driver import MonotonicClock, RaftDriver, RaftMessageQueue
from broker.raft.file_log import FileLog
from broker.raft.file_quorum_store import FileQuorumStateStore
from broker.replication import controller_apis as apis
from broker.replication.controller_listener import ControllerListener, Handler
from broker.replication.raft_transport import RaftTransport
from broker.replication.voters import Voter, parse_voters

METADATA_DIR = "__cluster_metadata-0"


def controller_config(config: BrokerConfig, voters: int) -> c.ControllerConfig:
    """A combined node caps the default replication factor at the cluster's size
    (its voters); dedicated controllers cannot know how many brokers there are."""
    rf = config["default.replication.factor"]
    return c.ControllerConfig(
        session_timeout_ms=config["broker.session.timeout.ms"],
        disconnect_grace_ms=config["broker.session.disconnect.grace.ms"],
        default_replication_factor=min(rf, voters) if config.is_broker else rf,
        default_partitions=config["num.partitions"],
        unclean_leader_election=config["unclean.leader.election.enable"]
        or bugs.active("unclean-election")
        or bugs.active("min-isr-ignored"),
        placement_seed=seed if (seed := config["replica.placement.seed"]) >= 0 else None,
        leader_imbalance_check_interval_ms=config["leader.imbalance.check.interval.seconds"] * 1000
        if config["auto.leader.rebalance.enable"]
        else None,
    )


class QuorumNode:
    def __init__(self, config: BrokerConfig, ledger: FsyncLedger) -> None:
        node_id = config.node_id
        self.voters = parse_voters(config["controller.quorum.voters"])
        if config.is_controller and node_id not in self.voters:
            raise ConfigError(f"--voters: node {node_id} is not among {sorted(self.voters)}")
        if not config.is_controller and node_id in self.voters:
            raise ConfigError(
                f"--voters: node {node_id} has process.roles=broker, so it is no voter"
            )
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
        self.loader = MetadataLoader()
        self.controller: QuorumController | None = None
        self.listener: ControllerListener | None = None
        if config.is_controller:
            self.controller = controller = QuorumController(
                node_id,
                raft,
                clock,
                rng,
                controller_config(config, len(self.voters)),
                self.loader,
                peer_gone=self.transport.peer_gone,
            )
            raft.register(controller)
            self.listener = ControllerListener(
                self._handlers(controller), controller.broker_disconnected
            )
            self.driver = RaftDriver(raft, queue, on_tick=controller.poll)
        else:
            raft.register(self.loader)
            self.driver = RaftDriver(raft, queue)
        self.own: Voter | None = self.voters.get(node_id)

    def _handlers(self, ctl: QuorumController) -> dict[int, Handler]:
        raft = self.transport.handle
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
            55: lambda r: apis.handle_describe_quorum(self.raft, r),
        }

    async def start(self) -> None:
        """Opens the controller listener (a controller's) and joins the quorum."""
        if self.listener is not None and self.own is not None:
            try:
                await self.listener.start(self.own.host, self.own.port)
            except OSError as e:
                raise ConfigError(
                    f"--voters: cannot listen on {self.own.host}:{self.own.port}: {e}"
                ) from None
        self.driver.start()

    async def stop(self) -> None:
        if self.listener is not None:
            await self.listener.stop()
        await self.driver.stop()
        await self.transport.close()
