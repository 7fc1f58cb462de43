"""A fetch that finds nothing new waits at the leader (KRaft's fetch purgatory):
it is answered once the log or the high watermark moves, the leadership
changes, its wait runs out, or a newer fetch from the same replica comes; one
whose answer carries news is answered at once, and the follower fetches again
as soon as it is answered."""

from __future__ import annotations

from pathlib import Path

from kio.schema.errors import ErrorCode

from broker.raft.client import RaftClient
from broker.raft.messages import (
    BeginQuorumEpochRequest,
    Envelope,
    FetchRequest,
    FetchResponse,
    VoteRequest,
    VoteResponse,
)
from broker.raft.quorum_state import LeaderState, Role
from broker.raft.simulation import VirtualClock
from tests.broker.raft.test_client import Outbox, lone_voter

OBSERVER = 4  # fetches without counting for the high watermark
WAIT_MS = 500


def elected(tmp_path: Path, clock: VirtualClock) -> tuple[RaftClient, Outbox]:
    """Voter 1 of {1, 2, 3}, leader of epoch 1 with voter 2's votes; its
    leader-change entry sits at offset 0."""
    client, outbox = lone_voter(tmp_path, clock)
    clock.now = 10_000  # past its election timeout: it seeks pre-votes
    client.poll()
    client.poll()
    for pre_vote in (True, False):
        request = next(
            e
            for e in reversed(outbox.sent)
            if isinstance(e.body, VoteRequest)
            and e.body.pre_vote is pre_vote
            and e.destination == 2
        )
        epoch = 0 if pre_vote else 1
        client.handle(
            Envelope(2, 1, request.correlation_id, VoteResponse(ErrorCode.none, None, epoch, True))
        )
        client.poll()
    assert client.role is Role.LEADER
    return client, outbox


class Fetcher:
    """One replica's fetches to the leader, each with a fresh correlation id."""

    def __init__(self, client: RaftClient, outbox: Outbox, replica: int) -> None:
        self.client, self.outbox, self.replica = client, outbox, replica
        self.correlation = 100 * replica

    def fetch(self, offset: int, last_epoch: int, wait_ms: int = WAIT_MS) -> int:
        self.correlation += 1
        request = FetchRequest(self.replica, 1, offset, last_epoch, 512, wait_ms)
        self.client.handle(Envelope(self.replica, 1, self.correlation, request))
        return self.correlation

    def answer(self, correlation: int) -> FetchResponse | None:
        """The answer sent to that fetch, if any yet."""
        for e in self.outbox.sent:
            if e.destination == self.replica and e.correlation_id == correlation:
                assert isinstance(e.body, FetchResponse)
                return e.body
        return None


def observer_waiting(tmp_path: Path) -> tuple[VirtualClock, RaftClient, Fetcher, int]:
    """A leader holding the observer's fetch at its log end, which it reached
    with a first fetch; the held fetch's correlation id."""
    clock = VirtualClock()
    client, outbox = elected(tmp_path, clock)
    observer = Fetcher(client, outbox, OBSERVER)
    observer.fetch(0, 0)
    return clock, client, observer, observer.fetch(1, 1)


def test_a_fetch_with_nothing_new_waits_for_the_next_entry(tmp_path: Path) -> None:
    clock = VirtualClock()
    client, outbox = elected(tmp_path, clock)
    observer = Fetcher(client, outbox, OBSERVER)
    first = observer.answer(observer.fetch(0, 0))
    assert first is not None and len(first.records) == 1, "entries: answered at once"
    held = observer.fetch(1, 1)
    assert observer.answer(held) is None
    client.append([b"x"])
    answer = observer.answer(held)
    assert answer is not None and [e.offset for e in answer.records] == [1]


def test_a_fetch_waits_for_the_high_watermark_to_move(tmp_path: Path) -> None:
    clock = VirtualClock()
    client, outbox = elected(tmp_path, clock)
    observer, voter = Fetcher(client, outbox, OBSERVER), Fetcher(client, outbox, 2)
    observer.fetch(0, 0)
    held = observer.fetch(1, 1)
    assert observer.answer(held) is None, "the high watermark it knows: unknown still"
    voter.fetch(0, 0)
    acked = voter.answer(voter.fetch(1, 1))
    assert acked is not None and acked.high_watermark == 1, "news to the voter: at once"
    answer = observer.answer(held)
    assert answer is not None and answer.high_watermark == 1 and not answer.records


def test_a_held_fetch_is_answered_as_it_stood_when_its_wait_runs_out(tmp_path: Path) -> None:
    clock, client, observer, held = observer_waiting(tmp_path)
    clock.now += WAIT_MS - 1
    client.poll()
    assert observer.answer(held) is None
    clock.now += 1
    client.poll()
    answer = observer.answer(held)
    assert answer is not None and answer.error_code is ErrorCode.none and not answer.records


def test_a_held_fetch_is_answered_when_the_leader_resigns(tmp_path: Path) -> None:
    _, client, observer, held = observer_waiting(tmp_path)
    client.resign()
    client.poll()
    answer = observer.answer(held)
    assert answer is not None and answer.error_code is ErrorCode.not_leader_or_follower


def test_a_newer_fetch_from_the_replica_has_the_older_answered(tmp_path: Path) -> None:
    _, _, observer, older = observer_waiting(tmp_path)
    newer = observer.fetch(1, 1)
    assert observer.answer(older) is not None and observer.answer(newer) is None


def test_a_newer_fetch_answered_at_once_still_has_the_older_answered(tmp_path: Path) -> None:
    _, _, observer, older = observer_waiting(tmp_path)
    restarted = observer.answer(observer.fetch(0, 0))  # it lost its log: entries at once
    assert restarted is not None and restarted.records
    assert observer.answer(older) is not None


def test_a_fetch_that_may_not_wait_is_answered_at_once(tmp_path: Path) -> None:
    clock = VirtualClock()
    client, outbox = elected(tmp_path, clock)
    observer = Fetcher(client, outbox, OBSERVER)
    observer.fetch(0, 0)
    assert observer.answer(observer.fetch(1, 1, wait_ms=0)) is not None


def test_a_follower_fetches_again_at_once_and_asks_the_leader_to_wait(tmp_path: Path) -> None:
    clock = VirtualClock()
    client, outbox = lone_voter(tmp_path, clock)
    client.handle(Envelope(3, 1, 1, BeginQuorumEpochRequest(3, 1)))  # 3 leads epoch 1
    client.poll()
    fetches = [e for e in outbox.sent if isinstance(e.body, FetchRequest)]
    assert len(fetches) == 1 and fetches[0].body.max_wait_ms == WAIT_MS  # type: ignore[union-attr]
    client.handle(Envelope(3, 1, fetches[0].correlation_id, FetchResponse(ErrorCode.none, 3, 1)))
    client.poll()  # at the same instant
    assert len([e for e in outbox.sent if isinstance(e.body, FetchRequest)]) == 2


def test_a_held_fetch_counts_its_replica_heard_from_when_it_came(tmp_path: Path) -> None:
    """Check-quorum counts a voter heard from when its fetch arrived: answering a
    held fetch later, after the voter may have been cut off, is no news of it."""
    clock = VirtualClock()
    client, outbox = elected(tmp_path, clock)
    voter = Fetcher(client, outbox, 2)
    voter.fetch(0, 0)
    voter.fetch(1, 1)  # answered at once: the high watermark moved to 1
    came = clock.now
    held = voter.fetch(1, 1)
    clock.now += 200
    client.append([b"x"])
    assert voter.answer(held) is not None
    state = client.quorum.state
    assert isinstance(state, LeaderState) and state.progress[2].last_contact_ms == came
