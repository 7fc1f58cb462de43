"""Observers (KRaft's broker-only nodes) on the simulated network: they learn the
committed log, never vote nor stand, are not counted for the high watermark, find
the leader on their own and follow a new one after a failover."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from broker.raft.file_quorum_store import MemoryQuorumStateStore
from broker.raft.messages import Envelope, VoteRequest, VoteResponse
from broker.raft.protocols import ElectionState
from broker.raft.quorum_state import (
    IllegalTransitionError,
    QuorumState,
    Role,
    UnattachedState,
    VotedState,
)
from broker.raft.simulation import SimCluster
from tests.broker.raft.test_simulation import wait_for_convergence


def observed(cluster: SimCluster) -> list[object]:
    """Every message an observer sends, recorded as the network carries it."""
    sent: list[object] = []
    send = cluster.network.send

    def record(envelope: Envelope) -> None:
        if envelope.source in cluster.observer_ids:
            sent.append(envelope.body)
        send(envelope)

    cluster.network.send = record  # type: ignore[method-assign]
    return sent


def run_checking_observer_roles(cluster: SimCluster, steps: int) -> None:
    for _ in range(steps):
        cluster.step()
        for node_id in cluster.observer_ids:
            client = cluster.nodes[node_id].client
            assert client is None or client.role in (Role.UNATTACHED, Role.FOLLOWER)


def test_an_observer_learns_every_committed_entry() -> None:
    cluster = SimCluster(3, 11, observers=2)
    wait_for_convergence(cluster)
    for _ in range(30):
        cluster.append_value()
        run_checking_observer_roles(cluster, 2)
    wait_for_convergence(cluster)
    leader = cluster.leader()
    assert leader is not None and leader.node_id in cluster.ids
    for node_id in cluster.observer_ids:
        node, leader_node = cluster.nodes[node_id], cluster.nodes[leader.node_id]
        assert node.client is not None and node.client.leader_id == leader.node_id
        assert node.state is not None and leader_node.state is not None
        assert node.state.values == leader_node.state.values
    cluster.check_nothing_committed_lost()


def test_an_observer_never_asks_for_votes_and_refuses_to_give_one() -> None:
    cluster = SimCluster(3, 13, observers=1)
    sent = observed(cluster)
    wait_for_convergence(cluster)
    leader = cluster.leader()
    assert leader is not None
    cluster.crash(leader.node_id)  # elections follow; the observer only watches
    run_checking_observer_roles(cluster, 300)
    assert sent and not any(isinstance(body, VoteRequest) for body in sent)
    observer = cluster.nodes[min(cluster.observer_ids)]
    assert observer.client is not None
    saved = observer.store.read()
    assert saved is None or saved.voted_for is None
    answer = observer.client._handle_vote(VoteRequest(observer.client.epoch + 1, 1, 99, 99))
    assert answer == VoteResponse(
        ErrorCode.inconsistent_voter_set, observer.client.leader_id, observer.client.epoch, False
    )


def test_an_observer_is_not_counted_for_the_high_watermark() -> None:
    """With two of three voters down, two fetching observers make no majority:
    the leader holds the entry but does not commit it."""
    cluster = SimCluster(3, 17, observers=2)
    wait_for_convergence(cluster)
    leader = cluster.leader()
    assert leader is not None
    for voter in cluster.ids - {leader.node_id}:
        cluster.crash(voter)
    committed = leader.high_watermark
    cluster.append_value()
    run_checking_observer_roles(cluster, 40)  # well within check-quorum's 1.5 fetch timeouts
    assert leader.role is Role.LEADER and leader.high_watermark == committed
    for node_id in cluster.observer_ids:
        assert cluster.nodes[node_id].log.end_offset == leader.log.end_offset


def test_an_observer_follows_the_new_leader_after_a_failover() -> None:
    cluster = SimCluster(3, 19, observers=1)
    wait_for_convergence(cluster)
    old = cluster.leader()
    assert old is not None
    cluster.crash(old.node_id)
    run_checking_observer_roles(cluster, 50)
    wait_for_convergence(cluster)
    new = cluster.leader()
    assert new is not None and new.node_id != old.node_id
    cluster.append_value()
    wait_for_convergence(cluster)
    observer = cluster.nodes[min(cluster.observer_ids)].client
    assert observer is not None
    assert (observer.leader_id, observer.epoch) == (new.node_id, new.epoch)
    assert observer.high_watermark == new.log.end_offset


def test_an_observer_started_late_discovers_the_leader() -> None:
    cluster = SimCluster(3, 23, observers=1)
    late = min(cluster.observer_ids)
    cluster.crash(late)
    wait_for_convergence(cluster)
    for _ in range(10):
        cluster.append_value()
        cluster.step()
    cluster.start(late)
    wait_for_convergence(cluster)
    client = cluster.nodes[late].client
    leader = cluster.leader()
    assert client is not None and leader is not None
    assert client.leader_id == leader.node_id and client.role is Role.FOLLOWER


def test_quorum_state_refuses_an_observer_any_voting_role() -> None:
    quorum = QuorumState(4, frozenset({1, 2, 3}), MemoryQuorumStateStore())
    quorum.transition(UnattachedState(1, 0))
    with pytest.raises(IllegalTransitionError, match="observer"):
        quorum.transition(VotedState(1, 2, 0))


@pytest.mark.parametrize(
    ("saved", "role"),
    [
        (ElectionState(3, 4, None), Role.UNATTACHED),  # its vote as a voter is void
        (ElectionState(3, 4, 4), Role.UNATTACHED),  # so is its leadership
        (ElectionState(3, None, 2), Role.FOLLOWER),
    ],
)
def test_a_former_voter_restarted_as_an_observer_keeps_no_vote(
    saved: ElectionState, role: Role
) -> None:
    store = MemoryQuorumStateStore()
    store.write(saved)
    quorum = QuorumState(4, frozenset({1, 2, 3}), store)
    quorum.restore(0)
    assert (quorum.role, quorum.epoch) == (role, 3)
