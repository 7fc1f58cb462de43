"""The Raft client of one node of the metadata quorum (KRaft's ``KafkaRaftClient``):
a controller is a voter, a broker-only node an observer.

It is a deterministic state machine driven from outside: ``poll()`` fires timers,
``handle()`` takes a delivered message, ``append()`` writes as leader. Time comes
from a ``Clock`` and randomness from a seeded ``random.Random``, and the only other
collaborators are the three seams of ``protocols``; so a broker runs it over files
and sockets, and the simulation runs it over memory on a virtual clock.

What it implements:
- elections: randomised election timeout, Vote with the candidate's (last epoch, end
  offset), one vote per epoch (persisted before it is granted), BeginQuorumEpoch to
  announce the winner, EndQuorumEpoch when a leader resigns;
- replication: followers fetch with (fetch offset, last fetched epoch); the leader
  answers with entries, or with a diverging epoch so the follower truncates, or with
  its snapshot id when the follower is behind the log start (then FetchSnapshot).
  A fetch that finds nothing new, from a replica that knows the high watermark,
  waits at the leader (KRaft's fetch purgatory) until the log or the high
  watermark moves, the leadership changes or the request's max wait runs out, and
  the follower fetches again as soon as it is answered;
- commitment: the high watermark is the offset a majority of voters has matched,
  counted only once it covers the leader's own leader-change entry;
- failure detection: a follower that hears nothing from its leader for the fetch
  timeout stands for election; a leader that hears from no majority for 1.5 fetch
  timeouts resigns (check-quorum);
- observers: a node outside the voter set fetches like a follower but never votes
  nor stands, and the leader does not count it for the high watermark. Without a
  leader it knows (at start, or once its leader went silent for the fetch timeout)
  it fetches from a random voter, whose answer names the current leader and epoch.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from typing import Protocol

from kio.schema.errors import ErrorCode

from broker.raft import replication
from broker.raft.entries import EntryKind, LogEntry, OffsetAndEpoch, Snapshot
from broker.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    Envelope,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    RaftRequest,
    RaftResponse,
    VoteRequest,
    VoteResponse,
)
from broker.raft.protocols import Clock, NetworkChannel, QuorumStateStore, ReplicatedLog
from broker.raft.quorum_state import (
    AnyState,
    CandidateState,
    FollowerState,
    LeaderState,
    ProspectiveState,
    QuorumState,
    ResignedState,
    Role,
    UnattachedState,
    VotedState,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RaftConfig:
    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    fetch_interval_ms: int = 50
    #: how long the leader may hold a fetch with nothing new; at most half the
    #: fetch timeout is asked, so a live leader answers well within it
    fetch_max_wait_ms: int = 500
    request_timeout_ms: int = 500
    max_fetch_entries: int = 512
    snapshot_chunk_bytes: int = 64 * 1024


class RaftListener(Protocol):
    """The state machine above the log (the controller, a broker's metadata loader)."""

    def handle_commit(self, entries: list[LogEntry]) -> None:
        """Committed data entries, in offset order, each delivered once per
        incarnation; empty right after a snapshot that nothing followed."""

    def handle_load_snapshot(self, snapshot: Snapshot) -> None:
        """Replace all state with ``snapshot``; commits continue from its offset."""

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        """A new leader or epoch. For this node it is called once everything before its
        epoch is committed and applied, i.e. when it may act as the active controller."""


class NotLeaderError(Exception):
    """``append`` on a node that is not the leader (NOT_CONTROLLER to the caller)."""


@dataclass(slots=True)
class _InFlight:
    destination: int
    request: RaftRequest
    deadline: int


@dataclass(frozen=True, slots=True)
class _ParkedFetch:
    """A fetch the leader holds, with the answer it had nothing new in and the log
    end it was made at; once the log end, or the epoch or high watermark the
    answer carries, changes, the fetch is answered anew."""

    correlation_id: int
    request: FetchRequest
    response: FetchResponse
    end_offset: int
    received_ms: int

    @property
    def deadline(self) -> int:
        """When its wait runs out."""
        return self.received_ms + self.request.max_wait_ms


class RaftClient:
    def __init__(
        self,
        node_id: int,
        voters: frozenset[int],
        log: ReplicatedLog,
        store: QuorumStateStore,
        channel: NetworkChannel,
        clock: Clock,
        rng: random.Random,
        config: RaftConfig | None = None,
    ) -> None:
        self.node_id = node_id
        self.voters = voters
        self.log = log
        self.channel = channel
        self.clock = clock
        self.rng = rng
        self.config = config or RaftConfig()
        self.listener: RaftListener | None = None
        self.quorum = QuorumState(node_id, voters, store)
        self._inflight: dict[int, _InFlight] = {}
        self._parked: dict[int, _ParkedFetch] = {}  # by the fetching replica
        self._fetch_wait_ms = min(self.config.fetch_max_wait_ms, self.config.fetch_timeout_ms // 2)
        self._next_correlation = 0
        self._applied = 0
        self._caught_up = False
        self._announced: tuple[int | None, int] | None = None
        self._next_discovery_ms = 0

    # -- public surface ------------------------------------------------------------------
    def register(self, listener: RaftListener) -> None:
        """The state machine above the log (Kafka's ``RaftClient.register``). It is
        built with this client, to append through it, so it registers afterwards."""
        self.listener = listener

    def start(self) -> None:
        self.quorum.restore(self._election_deadline())
        if self.voters == {self.node_id}:
            self._become_prospective()

    @property
    def is_voter(self) -> bool:
        return self.quorum.is_voter

    @property
    def epoch(self) -> int:
        return self.quorum.epoch

    @property
    def role(self) -> Role:
        return self.quorum.role

    @property
    def leader_id(self) -> int | None:
        return self.quorum.leader_id

    @property
    def high_watermark(self) -> int | None:
        state = self.quorum.state
        if isinstance(state, LeaderState | FollowerState):
            return state.high_watermark
        return None

    @property
    def next_answer_ms(self) -> int | None:
        """When the wait of the first held fetch runs out: the driver polls then, so
        the answer is not late by up to a tick."""
        return min((p.deadline for p in self._parked.values()), default=None)

    @property
    def applied_offset(self) -> int:
        """Everything below this offset has been handed to the listener."""
        return self._applied

    def replica_end_offsets(self) -> dict[int, int] | None:
        """On the leader, the log end offset each voter and each observer that
        fetched has matched, as the leader knows it (DescribeQuorum); else None."""
        state = self.quorum.state
        if not isinstance(state, LeaderState):
            return None
        return {replica: p.end_offset for replica, p in state.progress.items()}

    def is_ready_leader(self) -> bool:
        return self._announced == (self.node_id, self.epoch) and self.role is Role.LEADER

    def append(self, records: list[bytes]) -> int:
        """Append as leader; return the first offset. Commitment is signalled later
        through ``handle_commit`` once the high watermark passes it."""
        state = self.quorum.state
        if not isinstance(state, LeaderState):
            raise NotLeaderError(f"node {self.node_id} is not the leader of epoch {self.epoch}")
        first = self.log.append_as_leader(records, state.epoch, EntryKind.DATA)
        if state.update_local(self.log.end_offset, self.clock.now_ms()):
            self._deliver_committed()
        self._answer_parked_fetches()
        return first

    def create_snapshot(self, offset: int, data: bytes) -> None:
        """Store the listener's state up to ``offset`` and drop the log before it."""
        if offset > self._applied:
            raise ValueError(f"snapshot at {offset} beyond the applied offset {self._applied}")
        if offset <= self.log.start_offset:
            return
        epoch = self.log.read(offset - 1, 1)[0].epoch
        self.log.create_snapshot(Snapshot(OffsetAndEpoch(epoch, offset), data))
        self.log.delete_before_snapshot()

    def resign(self) -> None:
        """Graceful resignation: stop leading and ask the most caught-up voter to stand."""
        state = self.quorum.state
        if not isinstance(state, LeaderState):
            return
        successors = sorted(
            (v for v in self.voters if v != self.node_id),
            key=lambda v: -state.progress[v].end_offset,
        )
        self._transition(
            ResignedState(
                state.epoch, self._election_deadline(), set(successors), tuple(successors)
            )
        )

    def poll(self) -> None:
        now = self.clock.now_ms()
        self._inflight = {c: f for c, f in self._inflight.items() if f.deadline > now}
        state = self.quorum.state
        self._poll_state(state, now)
        if self.quorum.state is not state:  # a timer moved it on: act in the new role now
            self._poll_state(self.quorum.state, now)
        self._deliver_committed()
        self._answer_parked_fetches()

    def _poll_state(self, state: AnyState, now: int) -> None:
        if not self.is_voter and isinstance(state, UnattachedState):
            self._discover_leader(now)
        elif isinstance(state, UnattachedState | VotedState):
            if now >= state.election_deadline:
                self._become_prospective()
        elif isinstance(state, ProspectiveState):
            self._poll_prospective(state, now)
        elif isinstance(state, CandidateState):
            self._poll_candidate(state, now)
        elif isinstance(state, LeaderState):
            self._poll_leader(state, now)
        elif isinstance(state, FollowerState):
            self._poll_follower(state, now)
        elif isinstance(state, ResignedState):
            self._poll_resigned(state, now)

    def handle(self, envelope: Envelope) -> None:
        body = envelope.body
        if envelope.is_request:
            if isinstance(body, FetchRequest) and (
                older := self._parked.pop(envelope.source, None)
            ):
                # the replica stopped waiting for its older fetch: answer it as it stands
                self._respond(envelope.source, older.correlation_id, older.response)
            response = self._handle_request(envelope.source, body)  # type: ignore[arg-type]
            if (
                isinstance(body, FetchRequest)
                and isinstance(response, FetchResponse)
                and self._holds(envelope.source, body, response)
            ):
                self._park(envelope.source, envelope.correlation_id, body, response)
            else:
                self._respond(envelope.source, envelope.correlation_id, response)
        else:
            pending = self._inflight.pop(envelope.correlation_id, None)
            if pending is None or pending.destination != envelope.source:
                return  # late, duplicated or unknown: the request was already given up
            self._handle_response(envelope.source, pending.request, body)  # type: ignore[arg-type]
        self._deliver_committed()
        self._answer_parked_fetches()

    # -- timers per role -----------------------------------------------------------------
    def _poll_prospective(self, state: ProspectiveState, now: int) -> None:
        if now >= state.election_deadline:
            if state.leader_id is not None:  # no majority wants a change: follow again
                self._transition(
                    FollowerState(state.epoch, state.leader_id, self._fetch_deadline())
                )
            else:
                self._become_prospective()
            return
        last = self.log.end_offset_and_epoch()
        request = VoteRequest(state.epoch + 1, self.node_id, last.epoch, last.offset, pre_vote=True)
        for voter in sorted(state.unanswered()):
            self._send_unless_inflight(voter, request)

    def _poll_candidate(self, state: CandidateState, now: int) -> None:
        if now >= state.election_deadline:
            self._become_prospective()
            return
        last = self.log.end_offset_and_epoch()
        request = VoteRequest(state.epoch, self.node_id, last.epoch, last.offset)
        for voter in sorted(state.unanswered()):
            self._send_unless_inflight(voter, request)

    def _poll_leader(self, state: LeaderState, now: int) -> None:
        if not state.has_majority_contact(now, self.config.fetch_timeout_ms * 3 // 2):
            log.info(
                "node %d: no majority fetched in epoch %d, resigning", self.node_id, state.epoch
            )
            self.resign()
            return
        for voter in sorted(self.voters - state.begin_epoch_acked):
            self._send_unless_inflight(voter, BeginQuorumEpochRequest(self.node_id, state.epoch))

    def _poll_follower(self, state: FollowerState, now: int) -> None:
        if now >= state.fetch_deadline and not self.is_voter:
            self._discover_leader(now)
            return
        if now >= state.fetch_deadline:
            self._become_prospective()
            return
        if now < state.next_fetch_ms or self._has_inflight(state.leader_id):
            return
        request: RaftRequest
        if state.snapshot_id is not None:
            request = FetchSnapshotRequest(
                self.node_id,
                state.epoch,
                state.snapshot_id,
                len(state.snapshot_buffer),
                self.config.snapshot_chunk_bytes,
            )
        else:
            request = self._fetch_request()
        self._send(state.leader_id, request)

    def _discover_leader(self, now: int) -> None:
        """An observer without a live leader fetches from a random voter (KRaft's
        bootstrap servers): a voter that is not the leader answers with the leader
        and epoch it knows, which ``_observe`` follows; the leader itself serves it."""
        if now < self._next_discovery_ms or self._inflight:
            return
        self._next_discovery_ms = now + self.config.fetch_interval_ms
        self._send(self.rng.choice(sorted(self.voters)), self._fetch_request())

    def _fetch_request(self) -> FetchRequest:
        return FetchRequest(
            self.node_id,
            self.epoch,
            self.log.end_offset,
            self.log.last_fetched_epoch(),
            self.config.max_fetch_entries,
            self._fetch_wait_ms,
        )

    def _poll_resigned(self, state: ResignedState, now: int) -> None:
        if now >= state.election_deadline:
            self._become_prospective()
            return
        request = EndQuorumEpochRequest(self.node_id, state.epoch, state.preferred_successors)
        for voter in sorted(state.unacked):
            self._send_unless_inflight(voter, request)

    # -- requests ------------------------------------------------------------------------
    def _handle_request(self, source: int, request: RaftRequest) -> RaftResponse:
        if isinstance(request, VoteRequest):
            return self._handle_vote(request)
        if isinstance(request, BeginQuorumEpochRequest):
            self._observe(request.leader_epoch, request.leader_id)
            return BeginQuorumEpochResponse(self._epoch_error(request.leader_epoch), *self._who())
        if isinstance(request, EndQuorumEpochRequest):
            return self._handle_end_quorum_epoch(request)
        if isinstance(request, FetchRequest):
            return self._handle_fetch(source, request, self.clock.now_ms())
        return self._handle_fetch_snapshot(request)

    def _who(self) -> tuple[int | None, int]:
        return self.quorum.leader_id, self.epoch

    def _epoch_error(self, epoch: int) -> ErrorCode:
        return ErrorCode.fenced_leader_epoch if epoch < self.epoch else ErrorCode.none

    def _handle_vote(self, request: VoteRequest) -> VoteResponse:
        if request.candidate_id not in self.voters or not self.is_voter:
            return VoteResponse(ErrorCode.inconsistent_voter_set, *self._who(), False)
        if request.pre_vote:
            return self._handle_pre_vote(request)
        if request.candidate_epoch < self.epoch:
            return VoteResponse(ErrorCode.fenced_leader_epoch, *self._who(), False)
        self._observe(request.candidate_epoch, None)
        state = self.quorum.state
        candidate_log = OffsetAndEpoch(request.last_offset_epoch, request.last_offset)
        if isinstance(state, VotedState):
            granted = state.voted_for == request.candidate_id
        elif isinstance(state, UnattachedState):
            granted = candidate_log >= self.log.end_offset_and_epoch()
            if granted:
                self.quorum.transition(
                    VotedState(state.epoch, request.candidate_id, self._election_deadline())
                )
        else:
            granted = False
        return VoteResponse(ErrorCode.none, *self._who(), granted)

    def _handle_pre_vote(self, request: VoteRequest) -> VoteResponse:
        """Would we vote for this candidate in the next epoch? Answered without changing
        any state; refused while we still hear from a leader (leader stickiness), which
        a follower does only once it has fetched from it (Kafka's ``canGrantVote``)."""
        if request.candidate_epoch <= self.epoch:  # the candidate is behind us
            return VoteResponse(self._epoch_error(request.candidate_epoch), *self._who(), False)
        state = self.quorum.state
        leader_alive = isinstance(state, LeaderState) or (
            isinstance(state, FollowerState)
            and state.fetched_from_leader
            and not state.leader_resigned
            and self.clock.now_ms() < state.fetch_deadline
        )
        candidate_log = OffsetAndEpoch(request.last_offset_epoch, request.last_offset)
        granted = not leader_alive and candidate_log >= self.log.end_offset_and_epoch()
        return VoteResponse(ErrorCode.none, *self._who(), granted)

    def _handle_end_quorum_epoch(self, request: EndQuorumEpochRequest) -> EndQuorumEpochResponse:
        self._observe(request.leader_epoch, request.leader_id)
        state = self.quorum.state
        if isinstance(state, FollowerState) and state.leader_id == request.leader_id:
            # The leader is going away: the most caught-up successor stands at once,
            # the others wait longer, so one election usually suffices.
            state.leader_resigned = True
            successors = list(request.preferred_successors)
            rank = successors.index(self.node_id) if self.node_id in successors else len(successors)
            state.fetch_deadline = min(
                state.fetch_deadline, self.clock.now_ms() + rank * self.config.election_timeout_ms
            )
        return EndQuorumEpochResponse(self._epoch_error(request.leader_epoch), *self._who())

    def _handle_fetch(self, source: int, request: FetchRequest, received_ms: int) -> FetchResponse:
        """The answer to a fetch received at ``received_ms``: the replica was heard
        from then, also when a held fetch is answered later."""
        state = self.quorum.state
        leader, epoch = self._who()
        if request.current_leader_epoch < epoch:
            return FetchResponse(ErrorCode.fenced_leader_epoch, leader, epoch)
        if request.current_leader_epoch > epoch:
            return FetchResponse(ErrorCode.unknown_leader_epoch, leader, epoch)
        if not isinstance(state, LeaderState):
            return FetchResponse(ErrorCode.not_leader_or_follower, leader, epoch)
        return replication.serve_fetch(self.log, state, source, request, received_ms)

    # -- fetches the leader holds --------------------------------------------------------
    def _holds(self, source: int, request: FetchRequest, response: FetchResponse) -> bool:
        """Whether to hold a fetch rather than answer it now: it may wait, and the
        answer has nothing the replica lacks (no entries, truncation, snapshot or
        error, and the high watermark it was last sent)."""
        state = self.quorum.state
        return (
            request.max_wait_ms > 0
            and isinstance(state, LeaderState)
            and response.error_code is ErrorCode.none
            and not response.records
            and response.diverging_epoch is None
            and response.snapshot_id is None
            and state.progress[source].sent_high_watermark == response.high_watermark
        )

    def _park(
        self, source: int, correlation_id: int, request: FetchRequest, response: FetchResponse
    ) -> None:
        """Hold a fetch until ``_answer_parked_fetches`` answers it."""
        self._parked[source] = _ParkedFetch(
            correlation_id, request, response, self.log.end_offset, self.clock.now_ms()
        )

    def _answer_parked_fetches(self) -> None:
        """Answers each held fetch whose answer would now differ (the log or the high
        watermark moved, or the leadership changed) anew, and those whose wait is
        over as they stand."""
        if not self._parked:
            return
        now = self.clock.now_ms()
        state = self.quorum.state
        for source, parked in list(self._parked.items()):
            unchanged = (
                isinstance(state, LeaderState)
                and state.epoch == parked.response.leader_epoch
                and self.log.end_offset == parked.end_offset
                and state.high_watermark == parked.response.high_watermark
            )
            if unchanged and now < parked.deadline:
                continue
            del self._parked[source]
            answer = (
                parked.response
                if unchanged
                else self._handle_fetch(source, parked.request, parked.received_ms)
            )
            self._respond(source, parked.correlation_id, answer)

    def _respond(self, destination: int, correlation_id: int, response: RaftResponse) -> None:
        state = self.quorum.state
        if (
            isinstance(response, FetchResponse)
            and isinstance(state, LeaderState)
            and response.error_code is ErrorCode.none
        ):
            state.progress[destination].sent_high_watermark = response.high_watermark
        self.channel.send(Envelope(self.node_id, destination, correlation_id, response))

    def _handle_fetch_snapshot(self, request: FetchSnapshotRequest) -> FetchSnapshotResponse:
        leader, epoch = self._who()
        if request.current_leader_epoch != epoch or self.role is not Role.LEADER:
            code = self._epoch_error(request.current_leader_epoch)
            code = ErrorCode.not_leader_or_follower if code is ErrorCode.none else code
            return FetchSnapshotResponse(code, leader, epoch)
        return replication.serve_fetch_snapshot(self.log, request, self.node_id, epoch)

    # -- responses -----------------------------------------------------------------------
    def _handle_response(self, source: int, request: RaftRequest, response: RaftResponse) -> None:
        if isinstance(request, VoteRequest) and request.pre_vote:
            self._handle_pre_vote_response(source, request, response)
            return
        if not self._observe(response.leader_epoch, response.leader_id):
            return
        state = self.quorum.state
        if response.leader_epoch != state.epoch:
            return
        if isinstance(response, VoteResponse) and isinstance(state, CandidateState):
            if response.error_code is ErrorCode.none:
                state.record_vote(source, response.vote_granted)
                if state.won():
                    self._become_leader(state)
        elif isinstance(response, BeginQuorumEpochResponse) and isinstance(state, LeaderState):
            if response.error_code is ErrorCode.none:
                state.begin_epoch_acked.add(source)
        elif isinstance(response, EndQuorumEpochResponse) and isinstance(state, ResignedState):
            state.unacked.discard(source)
        elif isinstance(state, FollowerState) and source == state.leader_id:
            if isinstance(response, FetchResponse) and isinstance(request, FetchRequest):
                self._handle_fetch_response(state, request, response)
            elif isinstance(response, FetchSnapshotResponse):
                self._handle_fetch_snapshot_response(state, response)

    def _handle_pre_vote_response(
        self, source: int, request: VoteRequest, response: RaftResponse
    ) -> None:
        """Count a pre-vote. The voter may be in an older epoch than ours (it had not
        heard of it); only a newer epoch, or a leader of ours we did not know, changes
        our state. The leader we stopped hearing from is no news."""
        state = self.quorum.state
        known = state.leader_id if isinstance(state, ProspectiveState) else None
        if response.leader_epoch > self.epoch or (
            response.leader_epoch == self.epoch and response.leader_id not in (None, known)
        ):
            self._observe(response.leader_epoch, response.leader_id)
            return
        if (
            isinstance(state, ProspectiveState)
            and isinstance(response, VoteResponse)
            and request.candidate_epoch == state.epoch + 1
            and response.error_code is ErrorCode.none
        ):
            state.record_vote(source, response.vote_granted)
            if state.won():
                self._become_candidate()

    def _handle_fetch_response(
        self, state: FollowerState, request: FetchRequest, response: FetchResponse
    ) -> None:
        now = self.clock.now_ms()
        if response.error_code is not ErrorCode.none:
            state.next_fetch_ms = now + self.config.fetch_interval_ms
            return
        self._heard_from_leader(state)
        more = replication.apply_fetch_response(self.log, state, request, response)
        # a leader that holds fetches answers when there is news: ask again at once
        waits = request.max_wait_ms > 0
        state.next_fetch_ms = now if more or waits else now + self.config.fetch_interval_ms

    def _handle_fetch_snapshot_response(
        self, state: FollowerState, response: FetchSnapshotResponse
    ) -> None:
        if not replication.snapshot_chunk_fits(state, response):
            state.snapshot_id = None  # the leader moved on: start again with a fetch
            state.next_fetch_ms = self.clock.now_ms() + self.config.fetch_interval_ms
            if response.error_code is ErrorCode.snapshot_not_found:
                # a live leader that deleted the snapshot for a newer one (Kafka
                # counts this answer as a successful fetch)
                self._heard_from_leader(state)
            return
        self._heard_from_leader(state)
        replication.apply_snapshot_chunk(self.log, state, response)

    def _heard_from_leader(self, state: FollowerState) -> None:
        state.fetch_deadline = self._fetch_deadline()
        state.fetched_from_leader = True

    # -- transitions ---------------------------------------------------------------------
    def _observe(self, epoch: int, leader_id: int | None) -> bool:
        """Move to a newer epoch, or learn our epoch's leader; False if ``epoch`` is stale."""
        if epoch < self.epoch:
            return False
        known = leader_id is not None and leader_id != self.node_id
        if epoch > self.epoch:
            if known:
                self._become_follower(epoch, leader_id)  # type: ignore[arg-type]
            else:
                self._transition(UnattachedState(epoch, self._election_deadline()))
        elif known and self.role in (
            Role.UNATTACHED,
            Role.VOTED,
            Role.PROSPECTIVE,
            Role.CANDIDATE,
        ):
            self._become_follower(epoch, leader_id)  # type: ignore[arg-type]
        return True

    def _become_follower(self, epoch: int, leader_id: int) -> None:
        if self.role is Role.LEADER:
            self._transition(UnattachedState(epoch, self._election_deadline()))
        self._transition(FollowerState(epoch, leader_id, self._fetch_deadline()))

    def _become_prospective(self) -> None:
        """Seek pre-votes, keeping this epoch's vote and leader (a resigned leader
        keeps its self-vote but not itself as leader)."""
        state = self.quorum.state
        voted: int | None = None
        if isinstance(state, VotedState | ProspectiveState):
            voted = state.voted_for
        elif isinstance(state, CandidateState | ResignedState):
            voted = self.node_id
        leader = state.leader_id if isinstance(state, FollowerState | ProspectiveState) else None
        prospective = ProspectiveState(
            self.epoch,
            self.node_id,
            self.voters,
            self._election_deadline(),
            voted_for=voted,
            leader_id=leader,
        )
        self._transition(prospective)
        if prospective.won():
            self._become_candidate()

    def _become_candidate(self) -> None:
        state = CandidateState(self.epoch + 1, self.node_id, self.voters, self._election_deadline())
        self._transition(state)
        if state.won():
            self._become_leader(state)

    def _become_leader(self, candidate: CandidateState) -> None:
        now = self.clock.now_ms()
        epoch_start = self.log.end_offset
        leader = LeaderState(candidate.epoch, self.node_id, self.voters, epoch_start, now)
        self._transition(leader)
        self.log.append_as_leader([b""], leader.epoch, EntryKind.LEADER_CHANGE)
        leader.update_local(self.log.end_offset, now)
        log.info(
            "node %d: leader of epoch %d from offset %d", self.node_id, leader.epoch, epoch_start
        )

    def _transition(self, state: AnyState) -> None:
        self.quorum.transition(state)
        self._inflight.clear()
        self._notify_leader_change()

    def _notify_leader_change(self) -> None:
        if self.role is Role.LEADER:
            return  # announced once ready, from _deliver_committed
        current = (self.quorum.leader_id, self.epoch)
        if current != self._announced:
            self._announced = current
            if self.listener is not None:
                self.listener.handle_leader_change(*current)

    def _fetch_deadline(self) -> int:
        """Followers of one leader fetch in step, so without jitter they would all stand
        at the same instant after it dies and split the vote."""
        jitter = self.rng.randrange(self.config.election_timeout_ms // 2 or 1)
        return self.clock.now_ms() + self.config.fetch_timeout_ms + jitter

    def _election_deadline(self) -> int:
        timeout = self.config.election_timeout_ms
        return self.clock.now_ms() + timeout + self.rng.randrange(timeout)

    # -- delivery ------------------------------------------------------------------------
    def _deliver_committed(self) -> None:
        """Hands the listener what is committed and not yet applied, as one batch.
        A node that starts (or restarts) hands it nothing until it has caught up
        with the leader's high watermark, as KRaft's MetadataLoader publishes
        nothing while it catches up: the metadata of its own stale log would
        make its broker act on leaderships long gone (and, as a partition
        leader of an old epoch, rewrite its leader-epoch cache)."""
        hw = self.high_watermark
        if hw is None or not self._catching_up_done(hw):
            return
        loaded = self._applied < self.log.start_offset
        if loaded:
            snapshot = self.log.latest_snapshot()
            if snapshot is None:
                raise AssertionError("log starts after 0 without a snapshot")
            if self.listener is not None:
                self.listener.handle_load_snapshot(snapshot)
            self._applied = snapshot.snapshot_id.offset
        data: list[LogEntry] = []
        while self._applied < hw:
            entries = self.log.read(self._applied, min(hw - self._applied, 1024))
            data += [e for e in entries if e.kind is EntryKind.DATA]
            self._applied = entries[-1].offset + 1
        if (data or loaded) and self.listener is not None:
            self.listener.handle_commit(data)  # a loaded snapshot goes out with it
        state = self.quorum.state
        if (
            isinstance(state, LeaderState)
            and self._applied > state.epoch_start_offset
            and self._announced != (self.node_id, state.epoch)
        ):
            self._announced = (self.node_id, state.epoch)
            if self.listener is not None:
                self.listener.handle_leader_change(self.node_id, state.epoch)

    def _catching_up_done(self, hw: int) -> bool:
        """Whether this node has caught up once: as leader at once, as follower
        when its high watermark reaches the leader's as last reported."""
        if not self._caught_up:
            state = self.quorum.state
            target = state.leader_high_watermark if isinstance(state, FollowerState) else hw
            self._caught_up = target is not None and hw >= target
        return self._caught_up

    # -- sending -------------------------------------------------------------------------
    def _has_inflight(self, destination: int) -> bool:
        return any(f.destination == destination for f in self._inflight.values())

    def _send_unless_inflight(self, destination: int, request: RaftRequest) -> None:
        if not any(
            f.destination == destination and type(f.request) is type(request)
            for f in self._inflight.values()
        ):
            self._send(destination, request)

    def _send(self, destination: int, request: RaftRequest) -> None:
        self._next_correlation += 1
        deadline = self.clock.now_ms() + self.config.request_timeout_ms
        if isinstance(request, FetchRequest):
            deadline += request.max_wait_ms
        self._inflight[self._next_correlation] = _InFlight(destination, request, deadline)
        self.channel.send(Envelope(self.node_id, destination, self._next_correlation, request))
