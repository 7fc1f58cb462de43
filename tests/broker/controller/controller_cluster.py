"""The Raft simulation with a ``QuorumController`` on every voter and simulated brokers
that register and heartbeat against whichever controller is active."""

from __future__ import annotations

import random
from concurrent.futures import Future
from dataclasses import dataclass

from broker.controller.quorum_controller import NotControllerError, QuorumController
from broker.controller.requests import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    ControllerConfig,
)
from broker.metadata.image import MetadataImage
from broker.raft.client import RaftClient, RaftListener
from broker.raft.quorum_state import LeaderState
from broker.raft.simulation import TICK_MS, Node, SimCluster

HEARTBEAT_MS = 300


@dataclass
class SimBroker:
    broker_id: int
    alive: bool = True
    epoch: int | None = None
    pending: Future[object] | None = None
    next_beat: int = 0


class ControllerCluster(SimCluster):
    def __init__(self, voters: int, seed: int, config: ControllerConfig | None = None) -> None:
        self.controllers: dict[int, QuorumController] = {}
        self.controller_config = config or ControllerConfig(
            session_timeout_ms=1500, snapshot_every_records=60
        )
        self.seed = seed
        self.brokers: dict[int, SimBroker] = {}
        super().__init__(voters, seed)

    def make_listener(self, node: Node, client: RaftClient) -> RaftListener:
        node.state = None
        controller = QuorumController(
            node.node_id,
            client,
            self.clock,
            random.Random(self.seed * 1000 + node.node_id),
            self.controller_config,
            peer_gone=lambda other: other not in {n.node_id for n in self.live()},
        )
        self.controllers[node.node_id] = controller
        return controller

    def after_poll(self, node: Node) -> None:
        self.controllers[node.node_id].poll()

    def step(self) -> None:
        super().step()
        for broker in self.brokers.values():
            self._tick_broker(broker)

    # -- helpers -------------------------------------------------------------------------
    def active(self) -> QuorumController | None:
        """The active controller of the newest epoch. A leader cut off from the
        quorum counts itself active until check-quorum makes it resign (1.5 fetch
        timeouts without a majority's fetch, as in KRaft), which may be after the
        others elected a new one; the quorum never commits its writes. One that
        outlived that window, or two in one epoch, would be a split brain."""
        live = {n.node_id for n in self.live()}
        active = [c for i, c in self.controllers.items() if i in live and c.active]
        epochs = [c.raft.epoch for c in active]
        assert len(set(epochs)) == len(epochs), "two active controllers in one epoch"
        newest = max(active, key=lambda c: c.raft.epoch, default=None)
        window = self.config.fetch_timeout_ms * 3 // 2
        for deposed in (c for c in active if c is not newest):
            state = deposed.raft.quorum.state
            assert isinstance(state, LeaderState), "an active controller that does not lead"
            assert state.has_majority_contact(self.clock.now, window), (
                "a deposed controller outlived check-quorum"
            )
        return newest

    def wait_active(self, max_ms: int = 10_000) -> QuorumController:
        for _ in range(max_ms // TICK_MS):
            if (controller := self.active()) is not None:
                return controller
            self.step()
        raise AssertionError("no active controller")

    def wait(self, future: Future[object], max_ms: int = 10_000) -> object:
        for _ in range(max_ms // TICK_MS):
            if future.done():
                return future.result()
            self.step()
        raise AssertionError("operation did not complete")

    def images(self) -> dict[int, MetadataImage]:
        return {n.node_id: self.controllers[n.node_id].loader.image for n in self.live()}

    def add_brokers(self, *broker_ids: int) -> None:
        for broker_id in broker_ids:
            self.brokers[broker_id] = SimBroker(broker_id)

    def _tick_broker(self, broker: SimBroker) -> None:
        if not broker.alive or self.clock.now < broker.next_beat:
            return
        if broker.pending is not None and not broker.pending.done():
            return
        if (
            broker.pending is not None
            and broker.epoch is None
            and broker.pending.exception() is None
        ):
            response = broker.pending.result()
            assert isinstance(response, BrokerRegistrationResponse)
            broker.epoch = response.broker_epoch
        controller = self.active()
        if controller is None:
            return
        broker.next_beat = self.clock.now + HEARTBEAT_MS
        if broker.epoch is None:
            request = BrokerRegistrationRequest(
                broker.broker_id, f"inc-{broker.broker_id}", "h", 9092
            )
            broker.pending = controller.register_broker(request)
        else:
            offset = controller.loader.image.offset
            heartbeat = BrokerHeartbeatRequest(broker.broker_id, broker.epoch, offset)
            broker.pending = controller.broker_heartbeat(heartbeat)


def not_controller(future: Future[object]) -> bool:
    return future.done() and isinstance(future.exception(), NotControllerError)
