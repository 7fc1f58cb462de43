"""Classic consumer-group state: the state enum (each state lists the states it
may be entered from, as Kafka's ``GroupState``), members and the group."""

from __future__ import annotations

import asyncio
import enum
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

from broker.errors import ErrorCode

NO_GENERATION = -1


class IllegalGroupTransition(RuntimeError):
    """A transition the state table forbids: a coordinator bug, never client input."""


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    @property
    def valid_previous_states(self) -> frozenset[GroupState]:
        return _VALID_PREVIOUS[self]


_G = GroupState
_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    _G.EMPTY: frozenset({_G.PREPARING_REBALANCE}),
    _G.PREPARING_REBALANCE: frozenset({_G.STABLE, _G.COMPLETING_REBALANCE, _G.EMPTY}),
    _G.COMPLETING_REBALANCE: frozenset({_G.PREPARING_REBALANCE}),
    _G.STABLE: frozenset({_G.COMPLETING_REBALANCE}),
    _G.DEAD: frozenset(GroupState),
}


@dataclass(slots=True)
class JoinResult:
    """What JoinGroup answers; ``members`` is filled for the leader only."""

    error: ErrorCode
    member_id: str
    generation: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)
    skip_assignment: bool = False


@dataclass(slots=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_waiter: asyncio.Future[JoinResult] | None = None
    sync_waiter: asyncio.Future[tuple[ErrorCode, bytes]] | None = None
    heartbeat_deadline: float = 0.0
    session_timer: asyncio.TimerHandle | None = None

    def metadata_for(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def touch(self) -> None:
        self.heartbeat_deadline = time.monotonic() + self.session_timeout_ms / 1000

    @property
    def awaiting(self) -> bool:
        """Waiting in JoinGroup or SyncGroup: such a member cannot heartbeat."""
        return self.join_waiter is not None or self.sync_waiter is not None


def new_member_id(client_id: str) -> str:
    return f"{client_id}-{uuid.uuid4()}"


@dataclass(slots=True)
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation: int = 0
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    pending_members: set[str] = field(default_factory=set)
    static_members: dict[str, str] = field(default_factory=dict)
    state_timestamp_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    join_timer: asyncio.TimerHandle | None = None
    join_deadline: float = 0.0
    initial_delay: bool = False

    def transition(self, state: GroupState) -> None:
        if self.state not in state.valid_previous_states:
            raise IllegalGroupTransition(
                f"group {self.group_id}: {self.state.value} -> {state.value} is not allowed"
            )
        self.state = state
        self.state_timestamp_ms = int(time.time() * 1000)

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def supports(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        """A new member must share the protocol type and one protocol with all others."""
        if not protocol_type or not protocols:
            return False
        if not self.members:
            return True
        names = {name for name, _ in protocols}
        return protocol_type == self.protocol_type and bool(names & self.candidate_protocols())

    def candidate_protocols(self) -> set[str]:
        sets = [{name for name, _ in m.protocols} for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def select_protocol(self) -> str:
        """Each member votes for its most preferred common protocol; most votes wins."""
        candidates = self.candidate_protocols()
        votes: Counter[str] = Counter()
        for member in self.members.values():
            for name, _ in member.protocols:
                if name in candidates:
                    votes[name] += 1
                    break
        return max(sorted(votes), key=lambda name: votes[name])

    def all_joined(self) -> bool:
        return not self.pending_members and all(
            m.join_waiter is not None for m in self.members.values()
        )

    def rebalance_timeout_s(self) -> float:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0) / 1000
