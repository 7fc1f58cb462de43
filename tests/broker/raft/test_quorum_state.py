"""The role transition table and its epoch rules, and what a restart restores."""

from __future__ import annotations

import pytest

from broker.raft.file_quorum_store import MemoryQuorumStateStore
from broker.raft.protocols import ElectionState
from broker.raft.quorum_state import (
    TRANSITIONS,
    CandidateState,
    FollowerState,
    IllegalTransitionError,
    LeaderState,
    ProspectiveState,
    QuorumState,
    ResignedState,
    Role,
    UnattachedState,
    VotedState,
)

VOTERS = frozenset({1, 2, 3})


def quorum(store: MemoryQuorumStateStore | None = None) -> QuorumState:
    q = QuorumState(1, VOTERS, store or MemoryQuorumStateStore())
    q.restore(election_deadline=100)
    return q


def elect(q: QuorumState, epoch: int) -> None:
    """Unattached at ``epoch - 1`` -> prospective -> candidate -> leader of ``epoch``."""
    q.transition(ProspectiveState(epoch - 1, 1, VOTERS, 100))
    q.transition(CandidateState(epoch, 1, VOTERS, 100))
    q.transition(LeaderState(epoch, 1, VOTERS, 0, 0))


def test_table_matches_kraft_with_pre_vote() -> None:
    assert TRANSITIONS[Role.LEADER] == {Role.UNATTACHED, Role.RESIGNED}
    assert Role.LEADER not in TRANSITIONS[Role.FOLLOWER]
    assert Role.LEADER in TRANSITIONS[Role.CANDIDATE]
    assert [r for r, targets in TRANSITIONS.items() if Role.CANDIDATE in targets] == [
        Role.PROSPECTIVE
    ]
    assert all(Role.UNATTACHED in targets for targets in TRANSITIONS.values())


def test_only_a_prospective_node_may_stand() -> None:
    q = quorum()
    with pytest.raises(IllegalTransitionError, match="unattached -> candidate"):
        q.transition(CandidateState(1, 1, VOTERS, 100))
    q.transition(ProspectiveState(0, 1, VOTERS, 100))
    with pytest.raises(IllegalTransitionError, match="stays in its current epoch"):
        q.transition(ProspectiveState(1, 1, VOTERS, 100))
    q.transition(CandidateState(1, 1, VOTERS, 100))


def test_prospective_follower_returns_only_to_its_own_leader() -> None:
    q = quorum()
    q.transition(FollowerState(3, 2, 100))
    q.transition(ProspectiveState(3, 1, VOTERS, 100, leader_id=2))
    with pytest.raises(IllegalTransitionError, match="already has leader 2"):
        q.transition(FollowerState(3, 3, 100))
    q.transition(FollowerState(3, 2, 100))


def test_leader_cannot_become_follower_directly() -> None:
    q = quorum()
    elect(q, 1)
    with pytest.raises(IllegalTransitionError, match="leader -> follower"):
        q.transition(FollowerState(2, 2, 100))


def test_epoch_may_not_go_backwards_or_repeat() -> None:
    q = quorum()
    q.transition(UnattachedState(5, 100))
    with pytest.raises(IllegalTransitionError, match="epoch must grow"):
        q.transition(UnattachedState(5, 100))
    with pytest.raises(IllegalTransitionError):
        q.transition(FollowerState(4, 2, 100))
    q.transition(ProspectiveState(5, 1, VOTERS, 100))
    with pytest.raises(IllegalTransitionError, match="epoch after"):
        q.transition(CandidateState(7, 1, VOTERS, 100))


def test_follower_changes_leader_only_in_a_higher_epoch() -> None:
    q = quorum()
    q.transition(FollowerState(3, 2, 100))
    with pytest.raises(IllegalTransitionError):
        q.transition(FollowerState(3, 3, 100))
    q.transition(FollowerState(4, 3, 100))
    assert q.leader_id == 3


def test_vote_is_persisted_and_survives_restart() -> None:
    store = MemoryQuorumStateStore()
    q = quorum(store)
    q.transition(UnattachedState(2, 100))
    q.transition(VotedState(2, 3, 100))
    assert store.state == ElectionState(2, 3, None)
    again = quorum(store)
    assert isinstance(again.state, VotedState) and again.state.voted_for == 3


def test_restarted_leader_comes_back_resigned() -> None:
    store = MemoryQuorumStateStore()
    q = quorum(store)
    elect(q, 1)
    again = quorum(store)
    assert isinstance(again.state, ResignedState) and again.epoch == 1
    assert again.state.unacked == {2, 3}


def test_restarted_follower_keeps_its_leader_so_it_cannot_vote_again() -> None:
    store = MemoryQuorumStateStore()
    q = quorum(store)
    q.transition(UnattachedState(2, 100))
    q.transition(VotedState(2, 3, 100))
    q.transition(FollowerState(2, 3, 100))
    again = quorum(store)
    assert again.role is Role.FOLLOWER and again.leader_id == 3


def test_leader_high_watermark_waits_for_own_epoch_and_majority() -> None:
    leader = LeaderState(epoch=2, node_id=1, voters=VOTERS, epoch_start_offset=10, started_ms=0)
    assert not leader.update_local(11, now_ms=1)
    assert leader.high_watermark is None
    assert not leader.update_replica(2, 10, now_ms=2)  # matched only older entries
    assert leader.update_replica(2, 11, now_ms=3)
    assert leader.high_watermark == 11
    leader.update_local(20, now_ms=4)
    assert not leader.update_replica(3, 5, now_ms=5)  # a lagging voter never lowers it
    assert leader.high_watermark == 11
    assert not leader.update_replica(99, 20, now_ms=6)  # observers do not count


def test_candidate_counts_majority() -> None:
    c = CandidateState(1, 1, frozenset({1, 2, 3, 4, 5}), 100)
    c.record_vote(2, True)
    assert not c.won()
    c.record_vote(3, True)
    assert c.won()
    c2 = CandidateState(1, 1, frozenset({1, 2, 3}), 100)
    c2.record_vote(2, False)
    c2.record_vote(3, False)
    assert not c2.won() and c2.unanswered() == set()
