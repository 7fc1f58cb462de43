"""Targeted Raft client behaviours on the simulated network: snapshot transfer to a
follower behind the log start, graceful resignation, restart of a whole cluster,
votes and pre-votes, the election after a leader's crash."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from broker.raft.client import NotLeaderError, RaftClient
from broker.raft.entries import EntryKind, OffsetAndEpoch
from broker.raft.file_log import FileLog
from broker.raft.file_quorum_store import FileQuorumStateStore
from broker.raft.messages import (
    BeginQuorumEpochRequest,
    Envelope,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    VoteRequest,
    VoteResponse,
)
from broker.raft.quorum_state import FollowerState, Role
from broker.raft.replication import MAX_ENTRIES_PER_FETCH
from broker.raft.simulation import TICK_MS, SimCluster, VirtualClock
from tests.broker.raft.test_simulation import wait_for_convergence


def test_follower_behind_log_start_catches_up_by_fetch_snapshot() -> None:
    cluster = SimCluster(3, 61, snapshot_every=30)
    wait_for_convergence(cluster)
    leader = cluster.leader()
    assert leader is not None
    lagging = min(cluster.ids - {leader.node_id})
    cluster.crash(lagging)
    for _ in range(150):
        cluster.append_value()
        cluster.step()
    wait_for_convergence(cluster)
    assert cluster.nodes[leader.node_id].log.start_offset > 100
    cluster.start(lagging)
    wait_for_convergence(cluster)
    node = cluster.nodes[lagging]
    assert node.log.start_offset > 0, "the follower should have loaded a snapshot"
    leader_state = cluster.nodes[leader.node_id].state
    assert node.state is not None and leader_state is not None
    applied = node.client.applied_offset if node.client else 0
    assert {o: v for o, v in leader_state.values.items() if o < applied} == node.state.values
    cluster.check_nothing_committed_lost()


def test_a_restarted_follower_applies_nothing_before_it_has_caught_up() -> None:
    """KRaft's MetadataLoader publishes nothing while it catches up: a node back
    from a crash must not hand its listener the stale end of its own log (its
    broker would act on leaderships long gone), only the log up to the leader's
    high watermark, at once."""
    cluster = SimCluster(3, 67, snapshot_every=10**9)  # the log itself, no snapshot
    wait_for_convergence(cluster)
    leader = cluster.leader()
    assert leader is not None
    lagging = min(cluster.ids - {leader.node_id})
    cluster.crash(lagging)
    for i in range(MAX_ENTRIES_PER_FETCH + 200):  # more than one fetch brings back
        cluster.append_value()
        if i % 50 == 0:
            cluster.step()
    wait_for_convergence(cluster)
    stale_end = cluster.nodes[lagging].log.end_offset
    committed = leader.high_watermark
    assert committed is not None and committed > stale_end
    cluster.start(lagging)
    state = cluster.nodes[lagging].state
    assert state is not None
    batches: list[int] = []
    apply = state.handle_commit
    state.handle_commit = lambda entries: (batches.append(entries[-1].offset), apply(entries))
    wait_for_convergence(cluster)
    assert batches and batches[0] >= committed - 1, (stale_end, committed, batches)
    cluster.check_nothing_committed_lost()


def test_graceful_resignation_hands_over_within_one_election_timeout() -> None:
    cluster = SimCluster(3, 71)
    wait_for_convergence(cluster)
    old = cluster.leader()
    assert old is not None
    epoch = old.epoch
    old.resign()
    assert old.role is Role.RESIGNED
    with pytest.raises(NotLeaderError):
        old.append([b"late"])
    cluster.run_for(cluster.config.election_timeout_ms)
    new = cluster.leader()
    assert new is not None and new.node_id != old.node_id and new.epoch == epoch + 1
    assert old.role is Role.FOLLOWER and old.leader_id == new.node_id


def test_whole_cluster_restart_keeps_committed_data() -> None:
    cluster = SimCluster(5, 81)
    wait_for_convergence(cluster)
    for _ in range(60):
        cluster.append_value()
        cluster.step()
    wait_for_convergence(cluster)
    committed = dict(cluster.committed)
    for node_id in cluster.ids:
        cluster.crash(node_id)
    for node_id in sorted(cluster.ids):
        cluster.start(node_id)
    wait_for_convergence(cluster)
    assert all(cluster.committed[o] == e for o, e in committed.items())
    cluster.check_nothing_committed_lost()


class Outbox:
    def __init__(self) -> None:
        self.sent: list[Envelope] = []

    def send(self, envelope: Envelope) -> None:
        self.sent.append(envelope)


def lone_voter(
    tmp_path: Path, clock: VirtualClock | None = None, log: FileLog | None = None
) -> tuple[RaftClient, Outbox]:
    """Voter 1 of {1, 2, 3} over files in ``tmp_path``, started; what it sends
    stays in the outbox (the test answers for the others)."""
    outbox = Outbox()
    client = RaftClient(
        1,
        frozenset({1, 2, 3}),
        log or FileLog(tmp_path / "log"),
        FileQuorumStateStore(tmp_path / "quorum-state"),
        outbox,
        clock or VirtualClock(),
        random.Random(1),
    )
    client.start()
    return client, outbox


def vote_granted(client: RaftClient, outbox: Outbox, request: VoteRequest) -> bool:
    """Whether ``client`` grants ``request`` (a vote or a pre-vote)."""
    source = request.candidate_id
    client.handle(Envelope(source, client.node_id, request.candidate_epoch, request))
    body = outbox.sent[-1].body
    assert isinstance(body, VoteResponse)
    return body.vote_granted


def test_a_restarted_voter_never_votes_twice_in_one_epoch(tmp_path: Path) -> None:
    clock = VirtualClock()

    def ask(client: RaftClient, outbox: Outbox, candidate: int) -> bool:
        return vote_granted(client, outbox, VoteRequest(5, candidate, 0, 0))

    client, outbox = lone_voter(tmp_path, clock)
    assert ask(client, outbox, 2)
    assert ask(client, outbox, 2), "the same candidate may ask again"
    assert not ask(client, outbox, 3)
    client, outbox = lone_voter(tmp_path, clock)  # crash and restart: the vote was persisted
    assert client.role is Role.VOTED
    assert not ask(client, outbox, 3)
    assert ask(client, outbox, 2)


def test_a_returning_isolated_follower_does_not_depose_the_leader() -> None:
    """Pre-vote: cut off, the follower cannot win pre-votes, so it never raises the
    epoch, and on its return the healthy leader stays."""
    cluster = SimCluster(3, 91)
    wait_for_convergence(cluster)
    leader = cluster.leader()
    assert leader is not None
    epoch = leader.epoch
    follower = min(cluster.ids - {leader.node_id})
    cluster.network.partition([{follower}, set(cluster.ids - {follower})])
    cluster.run_for(5000)
    isolated = cluster.nodes[follower].client
    assert isolated is not None and isolated.epoch == epoch
    assert isolated.role in (Role.PROSPECTIVE, Role.FOLLOWER)  # seeking, never standing
    cluster.network.heal()
    wait_for_convergence(cluster)
    assert cluster.leader() is leader and leader.epoch == epoch
    assert isolated.role is Role.FOLLOWER and isolated.leader_id == leader.node_id


@pytest.mark.parametrize("pre_vote", [False, True])
def test_votes_go_only_to_candidates_with_a_log_at_least_as_long(
    tmp_path: Path, pre_vote: bool
) -> None:
    log = FileLog(tmp_path / "log")
    log.append_as_leader([b"a", b"b", b"c"], 1, EntryKind.DATA)
    client, outbox = lone_voter(tmp_path, log=log)

    def ask(epoch: int, last_epoch: int, last_offset: int) -> bool:
        request = VoteRequest(epoch, 2, last_epoch, last_offset, pre_vote=pre_vote)
        return vote_granted(client, outbox, request)

    assert not ask(2, 1, 2)  # shorter log in the same epoch
    assert not ask(3, 0, 5)  # longer, but of an older epoch
    assert ask(4, 1, 3)  # as long
    assert ask(5, 2, 1) is True  # a newer last epoch wins even if shorter


def test_survivors_of_a_dead_leader_elect_one_of_them_promptly() -> None:
    """Each of two survivors refused the other's pre-vote while it still
    followed the dead leader, and a prospective that lost went back to
    following it for a fetch timeout: with unequal logs the two could take
    turns for a minute. A follower that has not fetched since it began
    following grants pre-votes (Kafka's ``hasFetchedFromLeader``)."""
    config = SimCluster(3, 1).config
    bound = config.fetch_timeout_ms + 4 * config.election_timeout_ms
    slow: dict[int, int] = {}
    for seed in range(1, 301):
        cluster = SimCluster(3, seed)
        wait_for_convergence(cluster)
        leader = cluster.leader()
        assert leader is not None
        behind = min(cluster.ids - {leader.node_id})
        cluster.network.blocked.add((leader.node_id, behind))  # its log falls behind
        for _ in range(20):
            cluster.append_value()
            cluster.step()
        cluster.run_for(100)
        cluster.crash(leader.node_id)
        cluster.network.heal()
        elapsed = 0
        while cluster.leader() is None and elapsed <= bound:
            cluster.step()
            elapsed += TICK_MS
        if elapsed > bound:
            slow[seed] = elapsed
    assert not slow, f"no leader within {bound} ms of the leader's crash for seeds {slow}"


def test_a_follower_that_has_not_fetched_yet_grants_pre_votes(tmp_path: Path) -> None:
    client, outbox = lone_voter(tmp_path)
    client.handle(Envelope(3, 1, 1, BeginQuorumEpochRequest(3, 1)))  # 3 leads epoch 1
    assert client.role is Role.FOLLOWER

    def pre_vote_granted() -> bool:
        return vote_granted(client, outbox, VoteRequest(2, 2, 0, 0, pre_vote=True))

    assert pre_vote_granted(), "no fetch answered yet: the leader may be gone"
    client.poll()  # sends the first fetch
    fetch = next(e for e in reversed(outbox.sent) if isinstance(e.body, FetchRequest))
    client.handle(Envelope(3, 1, fetch.correlation_id, FetchResponse(ErrorCode.none, 3, 1)))
    assert not pre_vote_granted(), "the leader answered: it is alive"


@pytest.mark.parametrize(
    ("error", "heard"),
    [(ErrorCode.snapshot_not_found, True), (ErrorCode.not_leader_or_follower, False)],
)
def test_a_leader_without_the_snapshot_asked_for_is_still_heard_from(
    tmp_path: Path, error: ErrorCode, heard: bool
) -> None:
    """Kafka's follower takes SNAPSHOT_NOT_FOUND (the leader deleted the snapshot
    it was fetching, for a newer one) as an answer from a live leader: it starts
    over with a fetch and does not stand for election on that leader's account.
    Another error is no sign of a live leader."""
    clock = VirtualClock()
    client, outbox = lone_voter(tmp_path, clock)
    client.handle(Envelope(3, 1, 1, BeginQuorumEpochRequest(3, 1)))  # 3 leads epoch 1

    def answer(request_type: type, response: object) -> None:
        client.poll()
        sent = next(e for e in reversed(outbox.sent) if isinstance(e.body, request_type))
        client.handle(Envelope(3, 1, sent.correlation_id, response))

    answer(FetchRequest, FetchResponse(ErrorCode.none, 3, 1, snapshot_id=OffsetAndEpoch(1, 50)))
    state = client.quorum.state
    assert isinstance(state, FollowerState)
    deadline = state.fetch_deadline
    clock.now = deadline - 100
    answer(FetchSnapshotRequest, FetchSnapshotResponse(error, 3, 1))
    clock.now = deadline + 1
    client.poll()
    assert (client.role is Role.FOLLOWER) is heard
    if heard:
        assert not vote_granted(client, outbox, VoteRequest(2, 2, 0, 0, pre_vote=True))


def test_a_follower_whose_leader_went_silent_seeks_pre_votes_in_the_same_poll(
    tmp_path: Path,
) -> None:
    """The timer that ends a role is acted on in the poll that finds it run out,
    so the driver's tick does not delay the election by another tick."""
    clock = VirtualClock()
    client, outbox = lone_voter(tmp_path, clock)
    client.handle(Envelope(3, 1, 1, BeginQuorumEpochRequest(3, 1)))  # 3 leads epoch 1
    state = client.quorum.state
    assert isinstance(state, FollowerState)
    clock.now = state.fetch_deadline
    client.poll()
    assert client.role is Role.PROSPECTIVE
    asked = {e.destination for e in outbox.sent if isinstance(e.body, VoteRequest)}
    assert asked == {2, 3}
