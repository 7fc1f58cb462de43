"""The Raft roles of one node and the only transitions allowed between them.

Legal transitions (as KRaft's ``QuorumState`` with KIP-996 pre-vote; "higher" = a
larger epoch):

    Unattached  -> Unattached   on learning of a higher epoch
                -> Voted        on granting a vote in the current epoch
                -> Prospective  when the election timeout expires
                -> Follower     on discovering a leader of this or a higher epoch
    Voted       -> Unattached   on learning of a higher epoch
                -> Prospective  when the election timeout expires
                -> Follower     on discovering a leader of this or a higher epoch
    Prospective -> Unattached   on learning of a higher epoch
                -> Prospective  when the pre-vote times out without a known leader
                -> Candidate    on winning a majority of pre-votes (next epoch)
                -> Follower     on discovering a leader of this or a higher epoch,
                                or when the pre-vote times out and a leader is known
    Candidate   -> Unattached   on learning of a higher epoch
                -> Prospective  when the election timeout expires
                -> Leader       on winning a majority of votes
                -> Follower     on discovering a leader of this or a higher epoch
    Leader      -> Unattached   on learning of a higher epoch
                -> Resigned     on graceful shutdown or losing contact with a majority
    Follower    -> Unattached   on learning of a higher epoch
                -> Prospective  when the fetch timeout expires
                -> Follower     on discovering a leader of a higher epoch
    Resigned    -> Unattached   on learning of a higher epoch
                -> Prospective  when the election timeout expires
                -> Follower     on discovering a leader of a higher epoch

A prospective node asks for pre-votes for the next epoch without changing any
voter's state; only a majority of them makes it a candidate, so a node cut off from
the quorum cannot inflate the epoch and depose a healthy leader when it returns.

Every transition is persisted (epoch, vote, leader) before it takes effect, so a
restarted voter never votes twice in one epoch nor leads an epoch it already led.

A node outside the voter set is an observer (a KRaft broker-only node): it follows
the leader's log but is only ever Unattached or Follower, so it never votes, never
stands and never counts towards a majority.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from broker.raft.entries import OffsetAndEpoch
from broker.raft.protocols import ElectionState, QuorumStateStore


class Role(enum.Enum):
    UNATTACHED = "unattached"
    VOTED = "voted"
    PROSPECTIVE = "prospective"
    CANDIDATE = "candidate"
    LEADER = "leader"
    FOLLOWER = "follower"
    RESIGNED = "resigned"


#: the only roles of an observer
OBSERVER_ROLES = frozenset({Role.UNATTACHED, Role.FOLLOWER})

TRANSITIONS: dict[Role, frozenset[Role]] = {
    Role.UNATTACHED: frozenset({Role.UNATTACHED, Role.VOTED, Role.PROSPECTIVE, Role.FOLLOWER}),
    Role.VOTED: frozenset({Role.UNATTACHED, Role.PROSPECTIVE, Role.FOLLOWER}),
    Role.PROSPECTIVE: frozenset({Role.UNATTACHED, Role.PROSPECTIVE, Role.CANDIDATE, Role.FOLLOWER}),
    Role.CANDIDATE: frozenset({Role.UNATTACHED, Role.PROSPECTIVE, Role.LEADER, Role.FOLLOWER}),
    Role.LEADER: frozenset({Role.UNATTACHED, Role.RESIGNED}),
    Role.FOLLOWER: frozenset({Role.UNATTACHED, Role.PROSPECTIVE, Role.FOLLOWER}),
    Role.RESIGNED: frozenset({Role.UNATTACHED, Role.PROSPECTIVE, Role.FOLLOWER}),
}


class IllegalTransitionError(Exception):
    """A transition outside the table, or one that breaks the epoch rules (a bug)."""


@dataclass(slots=True)
class UnattachedState:
    epoch: int
    election_deadline: int
    role = Role.UNATTACHED


@dataclass(slots=True)
class VotedState:
    epoch: int
    voted_for: int
    election_deadline: int
    role = Role.VOTED


@dataclass(slots=True)
class _Tally:
    """Votes (or pre-votes) collected by this node, which always votes for itself."""

    epoch: int
    node_id: int
    voters: frozenset[int]
    election_deadline: int
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.granted.add(self.node_id)

    def record_vote(self, voter: int, granted: bool) -> None:
        (self.granted if granted else self.rejected).add(voter)

    def won(self) -> bool:
        return len(self.granted) > len(self.voters) // 2

    def unanswered(self) -> set[int]:
        return set(self.voters) - self.granted - self.rejected


@dataclass(slots=True)
class ProspectiveState(_Tally):
    """Seeking pre-votes for ``epoch + 1``; keeps the vote and leader of ``epoch``."""

    voted_for: int | None = None
    leader_id: int | None = None
    role = Role.PROSPECTIVE


@dataclass(slots=True)
class CandidateState(_Tally):
    role = Role.CANDIDATE


@dataclass(slots=True)
class ReplicaProgress:
    end_offset: int = 0
    last_contact_ms: int | None = None
    #: the high watermark in the last fetch answer sent to the replica
    sent_high_watermark: int | None = None


@dataclass(slots=True)
class LeaderState:
    """Tracks what each voter has matched, and the high watermark that follows from it.

    The high watermark is the offset a majority has matched, but only once that offset
    lies in this leader's own epoch (``epoch_start_offset`` is where its leader-change
    entry sits): entries of older epochs commit only indirectly, so a new leader's high
    watermark starts unknown and never moves backwards."""

    epoch: int
    node_id: int
    voters: frozenset[int]
    epoch_start_offset: int
    started_ms: int
    progress: dict[int, ReplicaProgress] = field(default_factory=dict)
    high_watermark: int | None = None
    begin_epoch_acked: set[int] = field(default_factory=set)
    role = Role.LEADER

    def __post_init__(self) -> None:
        for voter in self.voters:
            self.progress.setdefault(voter, ReplicaProgress())
        self.begin_epoch_acked.add(self.node_id)

    def update_local(self, end_offset: int, now_ms: int) -> bool:
        mine = self.progress[self.node_id]
        mine.end_offset, mine.last_contact_ms = end_offset, now_ms
        return self._maybe_advance()

    def record_contact(self, replica_id: int, now_ms: int) -> None:
        """Any fetch in this epoch shows the replica follows us (for check-quorum)."""
        self.progress.setdefault(replica_id, ReplicaProgress()).last_contact_ms = now_ms
        self.begin_epoch_acked.add(replica_id)

    def update_replica(self, replica_id: int, end_offset: int, now_ms: int) -> bool:
        """Record a voter's matched position; return True when the high watermark moved."""
        self.record_contact(replica_id, now_ms)
        self.progress[replica_id].end_offset = end_offset
        return replica_id in self.voters and self._maybe_advance()

    def _maybe_advance(self) -> bool:
        matched = sorted((self.progress[v].end_offset for v in self.voters), reverse=True)
        candidate = matched[len(self.voters) // 2]
        if candidate <= self.epoch_start_offset:
            return False
        if self.high_watermark is not None and candidate <= self.high_watermark:
            return False
        self.high_watermark = candidate
        return True

    def has_majority_contact(self, now_ms: int, timeout_ms: int) -> bool:
        """Check-quorum: has a majority (counting this node) fetched within the timeout?"""
        if now_ms - self.started_ms < timeout_ms:
            return True
        since = now_ms - timeout_ms
        fresh = sum(
            1
            for v in self.voters
            if v == self.node_id or (self.progress[v].last_contact_ms or -1) >= since
        )
        return fresh > len(self.voters) // 2


@dataclass(slots=True)
class FollowerState:
    epoch: int
    leader_id: int
    fetch_deadline: int
    high_watermark: int | None = None
    #: the leader's own high watermark, as last reported (not capped by this log)
    leader_high_watermark: int | None = None
    next_fetch_ms: int = 0
    snapshot_id: OffsetAndEpoch | None = None
    snapshot_buffer: bytearray = field(default_factory=bytearray)
    leader_resigned: bool = False
    #: whether the leader answered a fetch since this node began following it
    #: (Kafka's ``hasFetchedFromLeader``): until then it may be gone already
    fetched_from_leader: bool = False
    role = Role.FOLLOWER

    def update_high_watermark(self, leader_hw: int | None, end_offset: int) -> bool:
        """Follow the leader's high watermark, capped by what this node holds."""
        if leader_hw is None:
            return False
        self.leader_high_watermark = max(leader_hw, self.leader_high_watermark or 0)
        new = min(leader_hw, end_offset)
        if self.high_watermark is not None and new <= self.high_watermark:
            return False
        self.high_watermark = new
        return True


@dataclass(slots=True)
class ResignedState:
    epoch: int
    election_deadline: int
    unacked: set[int] = field(default_factory=set)
    preferred_successors: tuple[int, ...] = ()
    role = Role.RESIGNED


AnyState = (
    UnattachedState
    | VotedState
    | ProspectiveState
    | CandidateState
    | LeaderState
    | FollowerState
    | ResignedState
)


class QuorumState:
    """The current role plus its persisted election state; every change goes through
    ``transition`` so the table above is enforced in one place."""

    def __init__(self, node_id: int, voters: frozenset[int], store: QuorumStateStore) -> None:
        self.node_id = node_id
        self.voters = voters
        self._store = store
        self.state: AnyState = UnattachedState(epoch=0, election_deadline=0)

    @property
    def is_voter(self) -> bool:
        return self.node_id in self.voters

    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def role(self) -> Role:
        return self.state.role

    @property
    def leader_id(self) -> int | None:
        if isinstance(self.state, LeaderState):
            return self.node_id
        if isinstance(self.state, FollowerState):
            return self.state.leader_id
        return None

    def restore(self, election_deadline: int) -> ElectionState | None:
        """Resume from the store: a node that led its epoch comes back Resigned, one
        that knew a leader follows it again and one that voted keeps its vote, so no
        restart can lead to a second vote in an epoch; otherwise it waits Unattached.
        A former voter restarted as an observer keeps only the epoch and leader."""
        saved = self._store.read()
        if saved is None:
            self.state = UnattachedState(epoch=0, election_deadline=election_deadline)
        elif saved.leader_id == self.node_id and self.is_voter:
            others = set(self.voters) - {self.node_id}
            self.state = ResignedState(
                saved.epoch, election_deadline, others, tuple(sorted(others))
            )
        elif saved.leader_id not in (None, self.node_id):
            self.state = FollowerState(saved.epoch, saved.leader_id, election_deadline)
        elif saved.voted_for is not None and self.is_voter:
            self.state = VotedState(saved.epoch, saved.voted_for, election_deadline)
        else:
            self.state = UnattachedState(saved.epoch, election_deadline)
        return saved

    def transition(self, new: AnyState) -> None:
        old = self.state
        if new.role not in TRANSITIONS[old.role]:
            raise IllegalTransitionError(f"{old.role.value} -> {new.role.value} is not allowed")
        if not self.is_voter and new.role not in OBSERVER_ROLES:
            raise IllegalTransitionError(f"observer {self.node_id} cannot be {new.role.value}")
        self._check_epoch(old, new)
        self._store.write(self._election_state(new))
        self.state = new

    def _check_epoch(self, old: AnyState, new: AnyState) -> None:
        same_epoch_ok = {
            Role.UNATTACHED: False,
            Role.VOTED: old.role is Role.UNATTACHED,
            Role.PROSPECTIVE: True,
            Role.CANDIDATE: False,
            Role.LEADER: old.role is Role.CANDIDATE,
            Role.FOLLOWER: old.role
            in (Role.UNATTACHED, Role.VOTED, Role.CANDIDATE, Role.PROSPECTIVE),
            Role.RESIGNED: old.role is Role.LEADER,
        }[new.role]
        if new.epoch < old.epoch or (new.epoch == old.epoch and not same_epoch_ok):
            raise IllegalTransitionError(
                f"{old.role.value}@{old.epoch} -> {new.role.value}@{new.epoch}: epoch must grow"
            )
        if new.role is Role.PROSPECTIVE and new.epoch != old.epoch:
            raise IllegalTransitionError("a prospective node stays in its current epoch")
        if new.role is Role.CANDIDATE and new.epoch != old.epoch + 1:
            raise IllegalTransitionError("a candidate stands in the epoch after the current one")
        if (
            isinstance(old, ProspectiveState)
            and isinstance(new, FollowerState)
            and new.epoch == old.epoch
            and old.leader_id not in (None, new.leader_id)
        ):
            raise IllegalTransitionError(f"epoch {old.epoch} already has leader {old.leader_id}")

    def _election_state(self, state: AnyState) -> ElectionState:
        if isinstance(state, VotedState):
            return ElectionState(state.epoch, state.voted_for, None)
        if isinstance(state, ProspectiveState):
            return ElectionState(state.epoch, state.voted_for, state.leader_id)
        if isinstance(state, CandidateState):
            return ElectionState(state.epoch, self.node_id, None)
        if isinstance(state, LeaderState | ResignedState):
            return ElectionState(state.epoch, self.node_id, self.node_id)
        if isinstance(state, FollowerState):
            return ElectionState(state.epoch, None, state.leader_id)
        return ElectionState(state.epoch, None, None)
