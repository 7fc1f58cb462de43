"""The controller of one node, active only while its Raft client leads the metadata
log (KRaft's ``QuorumController``).

Every operation reads the controller's image, returns records and an answer, appends
the records and answers once they commit. While active the controller applies its own
records at once to a speculative image, so the next operation sees them; if it loses
leadership it drops that image for the last committed one and fails every waiting
operation with NOT_CONTROLLER. A controller that is not active refuses everything with
NOT_CONTROLLER and names the leader it knows, so a stale controller cannot act.
"""

from __future__ import annotations

import functools
import logging
import random
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from broker.controller.cluster_control import ClusterControlManager
from broker.controller.producer_ids import ProducerIdControlManager
from broker.controller.replication_control import ReplicationControlManager
from broker.controller.requests import (
    AlterPartitionRequest,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    ControllerConfig,
    ControllerResult,
    CreatableTopic,
)
from broker.metadata.image import MetadataImage
from broker.metadata.loader import MetadataLoader, encode_snapshot, replay_records
from broker.metadata.records import FenceBrokerRecord, MetadataRecord, encode_record
from broker.raft.client import NotLeaderError, RaftClient
from broker.raft.entries import LogEntry, Snapshot
from broker.raft.protocols import Clock

log = logging.getLogger(__name__)

Operation = Callable[[MetadataImage, int], ControllerResult]


class NotControllerError(Exception):
    """This node is not the active controller; ``leader_id`` is the one it knows of."""

    code = ErrorCode.not_controller

    def __init__(self, node_id: int, leader_id: int | None, epoch: int) -> None:
        super().__init__(
            f"node {node_id} is not the active controller (leader {leader_id}, epoch {epoch})"
        )
        self.leader_id = leader_id
        self.epoch = epoch


@dataclass(slots=True)
class _Waiting:
    last_offset: int
    future: Future[object]
    response: object


class QuorumController:
    """Also the node's ``RaftListener``: committed entries go to its ``loader``, whose
    publishers (the broker side) see every committed image."""

    def __init__(
        self,
        node_id: int,
        raft: RaftClient,
        clock: Clock,
        rng: random.Random,
        config: ControllerConfig | None = None,
        loader: MetadataLoader | None = None,
        peer_gone: Callable[[int], bool] = lambda _node: False,
    ) -> None:
        """``peer_gone(node)`` tells whether this node found no process behind that
        voter's address (refused or closed connections, not a silence)."""
        self.node_id = node_id
        self.peer_gone = peer_gone
        self.clock = clock
        self.config = config or ControllerConfig()
        self.loader = loader or MetadataLoader()
        self.cluster = ClusterControlManager(self.config.session_timeout_ms)
        self.replication = ReplicationControlManager(self.config, rng)
        self.producer_ids = ProducerIdControlManager(self.config.producer_id_block_size)
        self.raft = raft
        self.image = self.loader.image
        self._active_epoch: int | None = None
        self._last_leader: int | None = None  # the last controller this node knew
        self._waiting: list[_Waiting] = []
        self._last_poll_ms = clock.now_ms()
        self._balance_due_ms: int | None = None  # the next auto leader rebalance

    @property
    def active(self) -> bool:
        raft = self.raft
        return self._active_epoch == raft.epoch and raft.is_ready_leader()

    # -- RaftListener --------------------------------------------------------------------
    def handle_commit(self, entries: list[LogEntry]) -> None:
        self.loader.handle_commit(entries)
        if not self.active:
            self.image = self.loader.image
        if not entries:
            return
        committed_end = entries[-1].offset + 1
        done = [w for w in self._waiting if w.last_offset < committed_end]
        self._waiting = [w for w in self._waiting if w.last_offset >= committed_end]
        for waiting in done:
            waiting.future.set_result(waiting.response)

    def handle_load_snapshot(self, snapshot: Snapshot) -> None:
        self.loader.handle_load_snapshot(snapshot)
        self.image = self.loader.image

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        self.loader.handle_leader_change(leader_id, epoch)
        previous, self._last_leader = self._last_leader, leader_id or self._last_leader
        if leader_id == self.node_id:
            self._active_epoch = epoch
            self._balance_due_ms = None
            self.image = self.loader.image
            now_ms = self.clock.now_ms()
            self.cluster.reset_sessions(self.image, now_ms)
            if previous not in (None, self.node_id) and self.peer_gone(previous):
                # the old controller's process is gone (a kill, not a pause or a
                # partition): its node gets the grace a closed heartbeat connection
                # gets; restarted, it heartbeats here within it
                self.cluster.disconnected(previous, now_ms, self.config.disconnect_grace_ms)
            log.info("node %d: active controller in epoch %d", self.node_id, epoch)
        elif self._active_epoch is not None:
            self._renounce(leader_id, epoch)

    def _renounce(self, leader_id: int | None, epoch: int) -> None:
        log.info("node %d: no longer the active controller (epoch %d)", self.node_id, epoch)
        self._active_epoch = None
        self.image = self.loader.image
        waiting, self._waiting = self._waiting, []
        for w in waiting:
            w.future.set_exception(NotControllerError(self.node_id, leader_id, epoch))

    # -- operations ----------------------------------------------------------------------
    def register_broker(self, request: BrokerRegistrationRequest) -> Future[object]:
        return self._run(functools.partial(self._register, request=request))

    def broker_heartbeat(self, request: BrokerHeartbeatRequest) -> Future[object]:
        return self._run(lambda image, _nxt: self._heartbeat(image, request))

    def create_topics(self, topics: list[CreatableTopic]) -> Future[object]:
        return self._run(lambda image, _nxt: self.replication.create_topics(image, topics))

    def create_partitions(self, counts: dict[str, int]) -> Future[object]:
        return self._run(lambda image, _nxt: self.replication.create_partitions(image, counts))

    def alter_configs(
        self, changes: dict[str, list[tuple[str, int, str | None]]], incremental: bool
    ) -> Future[object]:
        return self._run(
            lambda image, _nxt: self.replication.alter_configs(image, changes, incremental)
        )

    def delete_topics(self, names: list[str]) -> Future[object]:
        return self._run(lambda image, _nxt: self.replication.delete_topics(image, names))

    def alter_partition(self, request: AlterPartitionRequest) -> Future[object]:
        return self._run(lambda image, _nxt: self.replication.alter_partition(image, request))

    def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> Future[object]:
        return self._run(
            lambda image, _nxt: self.producer_ids.allocate(image, broker_id, broker_epoch)
        )

    def elect_preferred_leaders(self) -> Future[object]:
        return self._run(
            lambda image, _nxt: ControllerResult(
                self.replication.elect_preferred_leaders(image), None
            )
        )

    def broker_disconnected(self, broker_id: int) -> None:
        """A broker's heartbeat connection closed (its process may be dead): with
        ``disconnect_grace_ms`` set, its session is cut to it, so a SIGKILLed
        leader's partitions move in about that time instead of a whole session
        timeout; off (Kafka's way), nothing changes."""
        if self.active:
            self.cluster.disconnected(
                broker_id, self.clock.now_ms(), self.config.disconnect_grace_ms
            )

    def poll(self) -> None:
        """Timers of the active controller: fence brokers whose session expired.

        A controller that was itself stalled (paused, starved) for half a session has
        not heard heartbeats that brokers did send: like a newly active controller, it
        gives every broker a fresh session instead of fencing them all at once."""
        now_ms = self.clock.now_ms()
        stalled = now_ms - self._last_poll_ms > self.config.session_timeout_ms // 2
        self._last_poll_ms = now_ms
        if self.active and stalled:
            log.info("node %d: controller stalled, renewing broker sessions", self.node_id)
            self.cluster.reset_sessions(self.image, now_ms)
        elif self.active:
            for broker_id in self.cluster.expired(self.image, self.clock.now_ms()):
                log.info("node %d: broker %d session expired, fencing", self.node_id, broker_id)
                self._run(functools.partial(self._fence, broker_id=broker_id))
            self._maybe_balance_leaders(now_ms)
        self._maybe_snapshot()

    def _maybe_balance_leaders(self, now_ms: int) -> None:
        """KRaft's auto leader rebalance: a check interval after leaderships are
        first found away from their preferred replicas, the preferred ones that are
        in sync take them back; while some stay away, the check comes round again."""
        interval = self.config.leader_imbalance_check_interval_ms
        if interval is None:
            return
        if self._balance_due_ms is None:
            if self.replication.imbalanced(self.image):
                self._balance_due_ms = now_ms + interval
        elif now_ms >= self._balance_due_ms:
            self._balance_due_ms = None
            log.info("node %d: moving leaderships back to preferred replicas", self.node_id)
            self.elect_preferred_leaders()

    # -- internals -----------------------------------------------------------------------
    def _heartbeat(self, image: MetadataImage, request: BrokerHeartbeatRequest) -> ControllerResult:
        code, record = self.cluster.heartbeat(image, request, self.clock.now_ms())
        registration = image.brokers.get(request.broker_id)
        fenced = registration.fenced if registration is not None else True
        if record is None:
            return ControllerResult([], BrokerHeartbeatResponse(code, fenced))
        if isinstance(record, FenceBrokerRecord):
            records = [record, *self.replication.handle_broker_fenced(image, request.broker_id)]
            return ControllerResult(records, BrokerHeartbeatResponse(code, True))
        unfenced = [record, *self.replication.handle_broker_unfenced(image, request.broker_id)]
        return ControllerResult(unfenced, BrokerHeartbeatResponse(code, False))

    def _register(
        self, image: MetadataImage, next_offset: int, request: BrokerRegistrationRequest
    ) -> ControllerResult:
        """A broker registering again starts fenced under a new epoch, so whatever it
        led or was in sync for under the old epoch is handed on first."""
        result = self.cluster.register(image, request, next_offset, self.clock.now_ms())
        if not result.records or request.broker_id not in image.brokers:
            return result
        moved = self.replication.handle_broker_fenced(image, request.broker_id)
        return ControllerResult([*result.records, *moved], result.response)

    def _fence(self, image: MetadataImage, _next_offset: int, broker_id: int) -> ControllerResult:
        registration = image.brokers.get(broker_id)
        if registration is None or registration.fenced:
            return ControllerResult([], None)
        fence = FenceBrokerRecord(broker_id, registration.broker_epoch)
        return ControllerResult(
            [fence, *self.replication.handle_broker_fenced(image, broker_id)], None
        )

    def _run(self, operation: Operation) -> Future[object]:
        future: Future[object] = Future()
        raft = self.raft
        if not self.active:
            future.set_exception(NotControllerError(self.node_id, raft.leader_id, raft.epoch))
            return future
        result = operation(self.image, raft.log.end_offset)
        if not result.records:
            future.set_result(result.response)
            return future
        first = raft.log.end_offset
        numbered: list[tuple[int, MetadataRecord]] = list(enumerate(result.records, start=first))
        image = replay_records(self.image, numbered)  # a bad record fails here, unwritten
        try:
            raft.append([encode_record(r) for r in result.records])
        except NotLeaderError:
            future.set_exception(NotControllerError(self.node_id, raft.leader_id, raft.epoch))
            return future
        self.image = image
        last = numbered[-1][0]
        if raft.applied_offset > last:
            future.set_result(result.response)
        else:
            self._waiting.append(_Waiting(last, future, result.response))
        return future

    def _maybe_snapshot(self) -> None:
        raft = self.raft
        applied = raft.applied_offset
        if applied - raft.log.start_offset >= self.config.snapshot_every_records:
            raft.create_snapshot(applied, encode_snapshot(self.loader.image))
