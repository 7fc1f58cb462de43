"""Followers' incremental fetch sessions (KIP-227): a request names only the
partitions whose fetch state changed, an answer only the partitions with news,
and the leader still takes every session partition's position from every
request (the ISR lag clock must not stop for a partition left unnamed)."""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from broker.config import TOPIC_KEYS
from broker.errors import ErrorCode
from broker.log.ledger import FsyncLedger
from broker.log.log import Log
from broker.protocol.codec import build_response
from broker.replication.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    CachedPartition,
    FetchSessionCache,
)
from broker.replication.fetcher import FetchSessionState, ReplicaFetchers, _FetchState
from broker.replication.partition import ReplicatedPartition
from broker.replication.peer_client import PeerError
from broker.replication.replica_fetch import serve_replica_fetch
from broker.server.topics import PartitionAssignment
from tests.broker.batches import make_batch

DEFAULTS = {name: key.default for name, key in TOPIC_KEYS.items()}


def part(index: int, offset: int, epoch: int = 0) -> Any:
    return SimpleNamespace(
        partition=index,
        fetch_offset=offset,
        current_leader_epoch=epoch,
        last_fetched_epoch=-1,
        log_start_offset=0,
        partition_max_bytes=1 << 20,
    )


def request(
    replica: int,
    session: tuple[int, int],
    parts: list[Any],
    forgotten: list[int] = (),  # type: ignore[assignment]
    wait_s: float = 0,
) -> Any:
    return SimpleNamespace(
        replica_id=replica,
        max_wait=datetime.timedelta(seconds=wait_s),
        session_id=session[0],
        session_epoch=session[1],
        topics=[SimpleNamespace(topic="t", partitions=parts)] if parts else [],
        forgotten_topics_data=[SimpleNamespace(topic="t", partitions=list(forgotten))]
        if forgotten
        else [],
    )


@pytest.fixture
def leaders(tmp_path: Path) -> Any:
    """Partitions t-0 and t-1 led by node 1, followed by 2 (ISR 1, 2), one record each."""
    ledger = FsyncLedger(tmp_path)
    partitions = {}
    for index in (0, 1):
        log = Log.open(tmp_path / f"t-{index}", dict(DEFAULTS), ledger, clean=True)
        leader = ReplicatedPartition("t", index, log, PartitionAssignment([1, 2], 1, 0, [1, 2]), 1)
        leader.log.append(bytearray(make_batch([b"x"])), 0)
        leader.maybe_advance_hw()
        partitions[("t", index)] = leader
    yield SimpleNamespace(partitions=partitions)
    for leader in partitions.values():
        leader.log.close()
    ledger.close()


def served(answer: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {p["partition_index"]: p for t in answer["responses"] for p in t["partitions"]}


def fetch(manager: Any, req: Any, sessions: FetchSessionCache) -> dict[str, Any]:
    return asyncio.run(serve_replica_fetch(manager, req, sessions))


def test_an_incremental_fetch_answers_only_what_changed(leaders: Any) -> None:
    sessions = FetchSessionCache()
    first = fetch(leaders, request(2, (0, INITIAL_EPOCH), [part(0, 0), part(1, 0)]), sessions)
    session_id = first["session_id"]
    assert session_id != 0 and set(served(first)) == {0, 1}  # a full answer
    # the follower took both records and names both at their new offsets: the
    # answer is read before the position counts (as Kafka's), so it has no news...
    second = fetch(leaders, request(2, (session_id, 1), [part(0, 1), part(1, 1)]), sessions)
    assert served(second) == {}
    # ...and the next carries the HW that position advanced, in both partitions
    third = fetch(leaders, request(2, (session_id, 2), []), sessions)
    assert {i: p["high_watermark"] for i, p in served(third).items()} == {0: 1, 1: 1}
    # nothing changed since: an empty request, an empty answer, yet the
    # follower's position is taken from the session for every partition
    leaders.partitions[("t", 0)].caught_up_at[2] = 0.0
    fourth = fetch(leaders, request(2, (session_id, 3), []), sessions)
    assert served(fourth) == {} and fourth["session_id"] == session_id
    assert leaders.partitions[("t", 0)].caught_up_at[2] > 0.0
    # a write to t-1: its records are news, t-0 stays out
    leaders.partitions[("t", 1)].log.append(bytearray(make_batch([b"y"])), 0)
    fifth = fetch(leaders, request(2, (session_id, 4), []), sessions)
    (answer,) = served(fifth).values()
    assert answer["partition_index"] == 1 and answer["records"]
    fetch(leaders, request(2, (session_id, 5), [part(1, 2)]), sessions)
    seventh = fetch(leaders, request(2, (session_id, 6), []), sessions)
    assert {i: p["high_watermark"] for i, p in served(seventh).items()} == {1: 2}


def test_a_parked_incremental_fetch_wakes_for_an_unnamed_partition(leaders: Any) -> None:
    sessions = FetchSessionCache()
    session_id = fetch(leaders, request(2, (0, 0), [part(0, 1), part(1, 1)]), sessions)[
        "session_id"
    ]
    assert served(fetch(leaders, request(2, (session_id, 1), []), sessions))  # the new HWs

    async def scenario() -> dict[str, Any]:
        parked = asyncio.create_task(
            serve_replica_fetch(leaders, request(2, (session_id, 2), [], wait_s=5), sessions)
        )
        await asyncio.sleep(0.05)
        assert not parked.done()
        leaders.partitions[("t", 0)].log.append(bytearray(make_batch([b"z"])), 0)
        leaders.partitions[("t", 0)].maybe_advance_hw()
        return await asyncio.wait_for(parked, 2)

    (answer,) = served(asyncio.run(scenario())).values()
    assert answer["partition_index"] == 0 and answer["records"]


def test_session_errors_and_forgotten_partitions(leaders: Any) -> None:
    sessions = FetchSessionCache()
    session_id = fetch(leaders, request(2, (0, 0), [part(0, 1), part(1, 1)]), sessions)[
        "session_id"
    ]
    stale = fetch(leaders, request(2, (session_id, 5), []), sessions)
    assert stale["error_code"] is ErrorCode.invalid_fetch_session_epoch
    unknown = fetch(leaders, request(2, (session_id + 1, 1), []), sessions)
    assert unknown["error_code"] is ErrorCode.fetch_session_id_not_found
    other = fetch(leaders, request(3, (session_id, 1), []), sessions)
    assert other["error_code"] is ErrorCode.fetch_session_id_not_found
    # t-1 forgotten: a write there is no news for this session any more
    fetch(leaders, request(2, (session_id, 1), [], forgotten=[1]), sessions)
    leaders.partitions[("t", 1)].log.append(bytearray(make_batch([b"y"])), 0)
    assert served(fetch(leaders, request(2, (session_id, 2), []), sessions)) == {}
    # a final-epoch request closes the session and is answered in full
    closing = fetch(leaders, request(2, (session_id, FINAL_EPOCH), [part(0, 1)]), sessions)
    assert closing["session_id"] == 0 and set(served(closing)) == {0}
    assert len(sessions) == 0


def test_an_error_is_always_answered_and_the_partition_resent_after(leaders: Any) -> None:
    sessions = FetchSessionCache()
    session_id = fetch(leaders, request(2, (0, 0), [part(0, 1)]), sessions)["session_id"]
    leader = leaders.partitions[("t", 0)]
    leader.reassign(PartitionAssignment([1, 2], 2, 1, [1, 2]))  # node 2 leads now
    failed = served(fetch(leaders, request(2, (session_id, 1), []), sessions))
    assert failed[0]["error_code"] is ErrorCode.not_leader_or_follower
    leader.reassign(PartitionAssignment([1, 2], 1, 1, [1, 2]))  # and node 1 again
    back = fetch(leaders, request(2, (session_id, 2), [part(0, 1, epoch=1)]), sessions)
    assert served(back)[0]["error_code"] is ErrorCode.none  # the HW is sent again


def test_after_a_diverging_epoch_the_high_watermark_is_sent_again() -> None:
    """The follower truncates and takes no HW from a diverging answer; cut to
    the leader's log end, it would hear of no HW again until the next write."""
    cached = CachedPartition(fetch=None)
    answer = {"records": b"", "high_watermark": 2, "log_start_offset": 0}
    assert cached.must_respond({**answer, "error_code": ErrorCode.none, "diverging_epoch": 1})
    assert cached.must_respond({**answer, "error_code": ErrorCode.none})
    assert not cached.must_respond({**answer, "error_code": ErrorCode.none})


def test_the_followers_session_names_only_changes() -> None:
    state = FetchSessionState()
    a, b = ("t", 0), ("t", 1)
    at = {a: _FetchState(0, 5, 0, 0), b: _FetchState(0, 7, 0, 0)}
    assert state.delta(at) == (at, [])  # a new session: everything
    state.sent(0, at)  # the leader made no session: full again
    assert (state.id, state.epoch) == (0, INITIAL_EPOCH) and state.delta(at) == (at, [])
    state.sent(42, at)
    assert (state.id, state.epoch) == (42, 1)
    assert state.delta(at) == ({}, [])
    moved = {a: _FetchState(0, 6, 0, 0)}
    assert state.delta(moved) == (moved, [b])
    state.sent(42, moved)
    assert state.epoch == 2
    state.reset()  # the next, full request closes session 42 on the leader
    assert (state.id, state.epoch) == (42, INITIAL_EPOCH) and state.delta(moved) == (moved, [])
    state.reset(known=False)  # the leader knows no session 42
    assert (state.id, state.epoch) == (0, INITIAL_EPOCH)


class WireToLeader:
    """A follower's connection to the ``leaders`` fixture: each request is
    served by the leader's session cache and answered as the kio response the
    wire would carry; ``fail_next`` makes the next request a lost connection."""

    def __init__(self, leaders: Any, sessions: FetchSessionCache) -> None:
        self.leaders, self.sessions = leaders, sessions
        self.fail_next = False
        self.sent: list[Any] = []

    async def request(self, req: Any, timeout: float) -> Any:
        self.sent.append(req)
        if self.fail_next:
            self.fail_next = False
            raise PeerError("connection reset")
        return build_response(1, 12, await serve_replica_fetch(self.leaders, req, self.sessions))


def test_a_follower_and_its_leader_keep_one_session_through_errors(
    leaders: Any, tmp_path: Path
) -> None:
    """The follower's session state and the leader's cache together: records
    and HWs arrive through incremental fetches; after a lost connection the
    follower's full request closes its old session, and after the leader lost
    its sessions (a restart) it starts from none."""
    (tmp_path / "follower").mkdir()
    ledger = FsyncLedger(tmp_path / "follower")
    followed = {}
    for index in (0, 1):
        log = Log.open(tmp_path / "follower" / f"t-{index}", dict(DEFAULTS), ledger, clean=True)
        followed[("t", index)] = ReplicatedPartition(
            "t", index, log, PartitionAssignment([1, 2], 1, 0, [1, 2]), 2
        )
    fetchers = ReplicaFetchers(2, followed, lambda node: None)
    fetchers._synced = {tp: 0 for tp in followed}  # already truncated where needed
    sessions = FetchSessionCache()
    wire = WireToLeader(leaders, sessions)

    async def fetch_once() -> None:
        await fetchers._fetch_once(wire, 1, followed)  # type: ignore[arg-type]

    async def scenario() -> None:
        await fetch_once()  # full: the records
        await fetch_once()  # incremental: the positions; the HWs come next
        await fetch_once()
        assert [p.log.next_offset for p in followed.values()] == [1, 1]
        assert [p.high_watermark for p in followed.values()] == [1, 1]
        assert len(wire.sent[-1].topics) == 0  # nothing changed, nothing named
        (session_id,) = [s.id for s in fetchers._sessions.values()]
        wire.fail_next = True
        with pytest.raises(PeerError):
            await fetch_once()
        await fetch_once()
        assert (wire.sent[-1].session_id, wire.sent[-1].session_epoch) == (session_id, 0)
        assert len(sessions) == 1
        sessions._sessions.clear()  # the leader restarted
        await fetch_once()  # FETCH_SESSION_ID_NOT_FOUND
        await fetch_once()
        assert (wire.sent[-1].session_id, wire.sent[-1].session_epoch) == (0, 0)
        leaders.partitions[("t", 1)].log.append(bytearray(make_batch([b"y"])), 0)
        await fetch_once()
        assert [p.log.next_offset for p in followed.values()] == [1, 2]
        assert len(sessions) == 1

    try:
        asyncio.run(scenario())
    finally:
        for p in followed.values():
            p.log.close()
        ledger.close()


def test_the_fetchers_follow_each_leader_as_of_the_last_update(tmp_path: Path) -> None:
    """The fetchers take who leads what when told of a change of the local
    replicas (Kafka's addFetcherForPartitions), not on every round: a loop
    starts for each leader followed, and ends once it leads none of them."""
    ledger = FsyncLedger(tmp_path)
    local = {}
    for index, leader in enumerate((1, 3, 2)):  # node 2 leads t-2 itself
        log = Log.open(tmp_path / f"t-{index}", dict(DEFAULTS), ledger, clean=True)
        assignment = PartitionAssignment([1, 2, 3], leader, 0, [1, 2, 3])
        local[("t", index)] = ReplicatedPartition("t", index, log, assignment, 2)
    fetchers = ReplicaFetchers(2, local, lambda node: None)
    t0, t1 = local[("t", 0)], local[("t", 1)]

    async def scenario() -> None:
        fetchers.update()
        assert fetchers.followed(1) == {("t", 0): t0}
        assert fetchers.followed(3) == {("t", 1): t1}
        assert fetchers.followed(2) == {} and sorted(fetchers._loops) == [1, 3]
        t0.reassign(PartitionAssignment([1, 2, 3], 3, 1, [1, 2, 3]))
        assert fetchers.followed(1) == {("t", 0): t0}  # until told
        fetchers.update()
        assert fetchers.followed(1) == {}
        assert fetchers.followed(3) == {("t", 0): t0, ("t", 1): t1}
        await asyncio.wait_for(fetchers._loops[1], 1)  # it had nothing left to fetch
        assert not fetchers._loops[3].done()
        await fetchers.stop()

    try:
        asyncio.run(scenario())
    finally:
        for p in local.values():
            p.log.close()
        ledger.close()
