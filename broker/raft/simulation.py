"""A seeded, deterministic Raft cluster on a virtual clock and an in-memory network
(after KRaft's ``RaftEventSimulationTest``): messages are delayed, dropped and cut by
partitions, nodes crash and restart with their durable log and election state, and
the safety invariants are checked after every step (one leader per epoch, monotonic
epochs and high watermarks, committed entries never changed or lost).

It lives in the package, not only the tests, because the benchmarks measure election
and commit times on it, and controllers are tested on top of it."""

from __future__ import annotations

import heapq
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from broker.raft.client import RaftClient, RaftConfig, RaftListener
from broker.raft.entries import EntryKind, LogEntry, Snapshot
from broker.raft.file_quorum_store import MemoryQuorumStateStore
from broker.raft.memory_log import MemoryLog
from broker.raft.messages import Envelope, VoteRequest, VoteResponse
from broker.raft.protocols import ReplicatedLog
from broker.raft.quorum_state import Role

TICK_MS = 10


class InvariantViolation(AssertionError):
    pass


@dataclass
class VirtualClock:
    now: int = 0

    def now_ms(self) -> int:
        return self.now


@dataclass
class Network:
    clock: VirtualClock
    rng: random.Random
    drop_rate: float = 0.0
    min_delay_ms: int = 1
    max_delay_ms: int = 30
    blocked: set[tuple[int, int]] = field(default_factory=set)
    down: set[int] = field(default_factory=set)
    votes: dict[tuple[int, int], int] = field(default_factory=dict)
    pre_votes: set[tuple[int, int, int]] = field(default_factory=set)
    _queue: list[tuple[int, int, Envelope]] = field(default_factory=list)
    _seq: int = 0

    def send(self, envelope: Envelope) -> None:
        body = envelope.body
        if isinstance(body, VoteRequest) and body.pre_vote:
            self.pre_votes.add((envelope.source, envelope.destination, envelope.correlation_id))
        pre_vote = (envelope.destination, envelope.source, envelope.correlation_id)
        if isinstance(body, VoteResponse) and body.vote_granted and pre_vote not in self.pre_votes:
            # SingleVote: a voter grants one candidate per epoch, even across restarts.
            voter = (envelope.source, body.leader_epoch)
            chosen = self.votes.setdefault(voter, envelope.destination)
            if chosen != envelope.destination:
                raise InvariantViolation(
                    f"node {voter[0]} voted for {chosen} and {envelope.destination} "
                    f"in epoch {voter[1]}"
                )
        if self._cut(envelope) or self.rng.random() < self.drop_rate:
            return
        delay = self.rng.randint(self.min_delay_ms, self.max_delay_ms)
        self._seq += 1
        heapq.heappush(self._queue, (self.clock.now + delay, self._seq, envelope))

    def _cut(self, envelope: Envelope) -> bool:
        link = (envelope.source, envelope.destination)
        return (
            link in self.blocked
            or envelope.source in self.down
            or envelope.destination in self.down
        )

    def due(self) -> list[Envelope]:
        out = []
        while self._queue and self._queue[0][0] <= self.clock.now:
            envelope = heapq.heappop(self._queue)[2]
            if not self._cut(envelope):
                out.append(envelope)
        return out

    def partition(self, groups: list[set[int]]) -> None:
        self.blocked = {(a, b) for g in groups for h in groups if g is not h for a in g for b in h}

    def heal(self) -> None:
        self.blocked = set()
        self.drop_rate = 0.0


class AppliedState:
    """The listener: the committed data each node has applied, by offset."""

    def __init__(self) -> None:
        self.values: dict[int, bytes] = {}
        self.leader_changes: list[tuple[int | None, int]] = []

    def handle_commit(self, entries: list[LogEntry]) -> None:
        for entry in entries:
            if entry.offset in self.values:
                raise InvariantViolation(f"offset {entry.offset} applied twice")
            self.values[entry.offset] = entry.data

    def handle_load_snapshot(self, snapshot: Snapshot) -> None:
        self.values = {int(k): bytes.fromhex(v) for k, v in json.loads(snapshot.data).items()}

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        self.leader_changes.append((leader_id, epoch))

    def snapshot_data(self, below: int) -> bytes:
        return json.dumps({o: v.hex() for o, v in self.values.items() if o < below}).encode()


@dataclass
class Node:
    node_id: int
    log: ReplicatedLog
    store: MemoryQuorumStateStore
    client: RaftClient | None = None
    state: AppliedState | None = None
    last_hw: int | None = None


class SimCluster:
    def __init__(
        self,
        voters: int,
        seed: int,
        log_factory: Callable[[int], ReplicatedLog] | None = None,
        snapshot_every: int = 40,
        config: RaftConfig | None = None,
        observers: int = 0,
    ) -> None:
        """``voters`` nodes 1..voters form the quorum; ``observers`` more nodes
        after them follow it without voting (KRaft's broker-only nodes)."""
        self.rng = random.Random(seed)
        self.clock = VirtualClock()
        self.network = Network(self.clock, random.Random(seed * 7919 + 1))
        self.config = config or RaftConfig(
            election_timeout_ms=300,
            fetch_timeout_ms=600,
            fetch_interval_ms=20,
            request_timeout_ms=250,
        )
        self.ids = frozenset(range(1, voters + 1))
        self.observer_ids = frozenset(range(voters + 1, voters + observers + 1))
        make_log = log_factory or (lambda _node: MemoryLog())
        self.nodes = {
            i: Node(i, make_log(i), MemoryQuorumStateStore()) for i in self.ids | self.observer_ids
        }
        self.snapshot_every = snapshot_every
        self.log_factory = log_factory
        self.leaders: dict[int, int] = {}
        self.epochs: dict[int, int] = {}
        self.committed: dict[int, LogEntry] = {}
        self.max_leader_hw = 0
        self.appended = 0
        for node_id in sorted(self.nodes):
            self.start(node_id)

    # -- lifecycle -----------------------------------------------------------------------
    def start(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if self.log_factory is not None and node.client is None:
            node.log = self.log_factory(node_id)  # reopen from disk: recovery runs
        node.client = RaftClient(
            node_id,
            self.ids,
            node.log,
            node.store,
            self.network,
            self.clock,
            random.Random(self.rng.random()),
            self.config,
        )
        node.client.register(self.make_listener(node, node.client))
        node.last_hw = None
        self.network.down.discard(node_id)
        node.client.start()

    def make_listener(self, node: Node, client: RaftClient) -> RaftListener:
        """The state machine of a (re)started node, over its new Raft client; by
        default the applied-values map."""
        node.state = AppliedState()
        return node.state

    def crash(self, node_id: int) -> None:
        self.nodes[node_id].client = None
        self.network.down.add(node_id)

    def live(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.client is not None]

    # -- running -------------------------------------------------------------------------
    def step(self) -> None:
        self.clock.now += TICK_MS
        for envelope in self.network.due():
            client = self.nodes[envelope.destination].client
            if client is not None:
                client.handle(envelope)
        for node in self.live():
            assert node.client is not None
            node.client.poll()
        self.check_invariants()
        for node in self.live():
            self.after_poll(node)

    def after_poll(self, node: Node) -> None:
        """Per-node work after the invariants are checked: snapshot the applied values."""
        self._maybe_snapshot(node)

    def run_for(self, ms: int) -> None:
        for _ in range(ms // TICK_MS):
            self.step()

    def leader(self) -> RaftClient | None:
        ready = [n.client for n in self.live() if n.client and n.client.is_ready_leader()]
        return max(ready, key=lambda c: c.epoch) if ready else None

    def append_value(self) -> int | None:
        leader = self.leader()
        if leader is None:
            return None
        self.appended += 1
        return leader.append([f"v{self.appended}".encode()])

    def _maybe_snapshot(self, node: Node) -> None:
        client, state = node.client, node.state
        assert client is not None and state is not None
        if client.applied_offset - node.log.start_offset >= self.snapshot_every:
            client.create_snapshot(
                client.applied_offset, state.snapshot_data(client.applied_offset)
            )

    # -- invariants ----------------------------------------------------------------------
    def check_invariants(self) -> None:
        for node in self.live():
            client = node.client
            assert client is not None
            self._single_leader(client)
            self._monotonic_epoch(node.node_id, client.epoch)
            self._monotonic_hw(node, client)
            self._committed_consistent(node, client)
        self._monotonic_leader_hw()

    def _single_leader(self, client: RaftClient) -> None:
        if client.role is Role.LEADER:
            other = self.leaders.setdefault(client.epoch, client.node_id)
            if other != client.node_id:
                raise InvariantViolation(
                    f"epoch {client.epoch}: leaders {other} and {client.node_id}"
                )

    def _monotonic_epoch(self, node_id: int, epoch: int) -> None:
        if epoch < self.epochs.get(node_id, 0):
            raise InvariantViolation(
                f"node {node_id}: epoch fell from {self.epochs[node_id]} to {epoch}"
            )
        self.epochs[node_id] = epoch

    def _monotonic_hw(self, node: Node, client: RaftClient) -> None:
        hw = client.high_watermark
        if hw is None:
            return
        if node.last_hw is not None and hw < node.last_hw:
            raise InvariantViolation(
                f"node {node.node_id}: high watermark fell {node.last_hw}->{hw}"
            )
        node.last_hw = hw
        if hw > node.log.end_offset:
            raise InvariantViolation(f"node {node.node_id}: high watermark beyond log end")

    def _monotonic_leader_hw(self) -> None:
        leaders = [n.client for n in self.live() if n.client and n.client.role is Role.LEADER]
        if not leaders:
            return
        newest = max(leaders, key=lambda c: c.epoch)
        hw = newest.high_watermark
        if hw is not None:
            if hw < self.max_leader_hw:
                raise InvariantViolation(f"leader high watermark fell {self.max_leader_hw}->{hw}")
            self.max_leader_hw = hw

    def _committed_consistent(self, node: Node, client: RaftClient) -> None:
        """Entries below a node's high watermark agree with every other node's, forever;
        and what the node applied agrees with them too."""
        hw = client.high_watermark or 0
        start = node.log.start_offset
        for entry in node.log.read(start, max(0, hw - start)):
            seen = self.committed.setdefault(entry.offset, entry)
            if seen != entry:
                raise InvariantViolation(
                    f"node {node.node_id}: committed offset {entry.offset} is {entry} not {seen}"
                )
        for offset, value in node.state.values.items() if node.state else ():
            known = self.committed.get(offset)
            if known is not None and known.data != value:
                raise InvariantViolation(f"node {node.node_id} applied {value!r} at {offset}")

    def check_nothing_committed_lost(self) -> None:
        """Every committed entry is still on every node's log, or in its applied state
        when a snapshot has replaced that part of the log."""
        for node in self.live():
            assert node.state is not None
            start = node.log.start_offset
            entries = {e.offset: e for e in node.log.read(start, node.log.end_offset - start)}
            for offset, committed in self.committed.items():
                if offset >= start and entries.get(offset) != committed:
                    raise InvariantViolation(f"node {node.node_id} lost committed {offset}")
                if (
                    offset < start
                    and committed.kind is EntryKind.DATA
                    and node.state.values.get(offset) != committed.data
                ):
                    raise InvariantViolation(f"node {node.node_id}: snapshot lacks {offset}")
