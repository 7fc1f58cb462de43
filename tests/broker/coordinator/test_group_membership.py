"""The classic rebalance protocol, driven on a real event loop with short timers."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from broker.coordinator.group.membership import (
    GroupConfig,
    JoinRequest,
    RebalanceEngine,
    SyncRequest,
)
from broker.coordinator.group.state import Group, GroupState, IllegalGroupTransition, JoinResult
from broker.errors import ErrorCode

G = GroupState
CONFIG = GroupConfig(min_session_timeout_ms=10, initial_rebalance_delay_ms=50)


def run(test: Callable[[RebalanceEngine, list[tuple[int, GroupState]]], Awaitable[None]]) -> None:
    """Runs ``test`` with an engine whose persisted snapshots are recorded."""
    persisted: list[tuple[int, GroupState]] = []

    async def persist(group: Group) -> None:
        persisted.append((group.generation, group.state))

    async def main() -> None:
        await asyncio.wait_for(test(RebalanceEngine(CONFIG, persist), persisted), 10)

    asyncio.run(main())


def request(
    member_id: str = "", instance: str | None = None, session_ms: int = 10_000, meta: bytes = b"m"
) -> JoinRequest:
    return JoinRequest(
        member_id=member_id,
        group_instance_id=instance,
        client_id="c",
        client_host="/127.0.0.1",
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=300,
        protocol_type="consumer",
        protocols=[("range", meta), ("roundrobin", meta)],
        require_known_member_id=True,
    )


def sync_request(
    member_id: str, plan: dict[str, bytes] | None = None, instance: str | None = None
) -> SyncRequest:
    """A SyncGroup of generation 1 that names no protocol."""
    return SyncRequest(1, member_id, instance, None, None, plan or {})


async def join_new(engine: RebalanceEngine, group: Group, **kw: object) -> asyncio.Task:
    """JoinGroup v4+: first MEMBER_ID_REQUIRED, then the real join (as a task)."""
    first = await engine.join(group, request(**kw))  # type: ignore[arg-type]
    assert first.error is ErrorCode.member_id_required
    return asyncio.create_task(engine.join(group, request(member_id=first.member_id, **kw)))  # type: ignore[arg-type]


async def two_members_synced(
    engine: RebalanceEngine, group: Group
) -> tuple[JoinResult, JoinResult]:
    """Two members join generation 1 and the leader syncs an empty plan."""
    a, b = await join_new(engine, group), await join_new(engine, group)
    ra, rb = await a, await b
    leader = ra if ra.members else rb
    await engine.sync(group, sync_request(leader.member_id))
    return ra, rb


def test_state_table_refuses_skipping_a_phase() -> None:
    group = Group("g")
    with pytest.raises(IllegalGroupTransition):
        group.transition(G.STABLE)
    group.transition(G.PREPARING_REBALANCE)
    group.transition(G.COMPLETING_REBALANCE)
    group.transition(G.STABLE)
    assert G.COMPLETING_REBALANCE.valid_previous_states == {G.PREPARING_REBALANCE}


def test_two_members_join_sync_and_become_stable() -> None:
    async def body(engine: RebalanceEngine, persisted: list) -> None:
        group = Group("g")
        a = await join_new(engine, group)
        b = await join_new(engine, group)
        ra, rb = await a, await b  # both answered after the initial delay
        assert ra.error is rb.error is ErrorCode.none
        assert ra.generation == rb.generation == 1 and group.state is G.COMPLETING_REBALANCE
        assert ra.protocol_name == "range"
        leader, follower = (ra, rb) if ra.members else (rb, ra)
        assert {m for m, _, _ in leader.members} == {ra.member_id, rb.member_id}
        assert follower.members == []
        follower_sync = asyncio.create_task(
            engine.sync(group, SyncRequest(1, follower.member_id, None, "consumer", "range", {}))
        )
        await asyncio.sleep(0)
        plan = {leader.member_id: b"A", follower.member_id: b"B"}
        assert await engine.sync(group, sync_request(leader.member_id, plan)) == (
            ErrorCode.none,
            b"A",
        )
        assert await follower_sync == (ErrorCode.none, b"B")
        assert group.state is G.STABLE and persisted == [(1, G.COMPLETING_REBALANCE)]
        assert engine.heartbeat(group, 1, follower.member_id, None) is ErrorCode.none
        assert engine.heartbeat(group, 0, follower.member_id, None) is ErrorCode.illegal_generation
        assert engine.heartbeat(group, 1, "nobody", None) is ErrorCode.unknown_member_id
        assert engine.validate_commit(group, 1, leader.member_id, None) is ErrorCode.none
        assert (
            engine.validate_commit(group, 0, leader.member_id, None) is ErrorCode.illegal_generation
        )

    run(body)


def test_leave_triggers_a_rebalance_that_the_rest_rejoins() -> None:
    async def body(engine: RebalanceEngine, persisted: list) -> None:
        group = Group("g")
        ra, rb = await two_members_synced(engine, group)
        leader, other = (ra, rb) if ra.members else (rb, ra)
        assert engine.leave(group, leader.member_id, None) is ErrorCode.none
        assert group.state is G.PREPARING_REBALANCE
        assert engine.heartbeat(group, 1, other.member_id, None) is ErrorCode.rebalance_in_progress
        assert engine.validate_commit(group, 1, other.member_id, None) is ErrorCode.none
        again = await engine.join(group, request(member_id=other.member_id))
        assert again.generation == 2 and again.leader == other.member_id  # alone: completes at once
        assert engine.leave(group, other.member_id, None) is ErrorCode.none
        assert engine.leave(group, other.member_id, None) is ErrorCode.unknown_member_id
        await asyncio.sleep(0)
        assert group.state is G.EMPTY and group.generation == 3
        assert engine.validate_commit(group, -1, "", None) is ErrorCode.none  # simple commit

    run(body)


def test_member_that_does_not_rejoin_is_removed_after_the_rebalance_timeout() -> None:
    async def body(engine: RebalanceEngine, persisted: list) -> None:
        group = Group("g")
        ra, rb = await two_members_synced(engine, group)
        # A third member joins; only it and one old member come back.
        c = await join_new(engine, group)
        again = await engine.join(group, request(member_id=ra.member_id))
        rc = await c
        assert again.generation == rc.generation == 2
        assert set(group.members) == {ra.member_id, rc.member_id}
        assert engine.heartbeat(group, 2, rb.member_id, None) is ErrorCode.unknown_member_id

    run(body)


def test_session_expiry_removes_a_silent_member() -> None:
    async def body(engine: RebalanceEngine, persisted: list) -> None:
        group = Group("g")
        a = await join_new(engine, group, session_ms=100)
        ra = await a
        await engine.sync(group, sync_request(ra.member_id, {ra.member_id: b"x"}))
        await asyncio.sleep(0.3)
        assert ra.member_id not in group.members and group.state is G.EMPTY

    run(body)


def test_static_member_rejoining_keeps_its_assignment_and_fences_the_old_id() -> None:
    async def body(engine: RebalanceEngine, persisted: list) -> None:
        group = Group("g")
        first = await engine.join(group, request(instance="i-1"))  # static: no MEMBER_ID_REQUIRED
        assert first.error is ErrorCode.none and first.generation == 1
        await engine.sync(group, sync_request(first.member_id, {first.member_id: b"P"}, "i-1"))
        back = await engine.join(group, request(instance="i-1"))
        assert back.error is ErrorCode.none and back.member_id != first.member_id
        assert back.generation == 1 and group.state is G.STABLE  # no rebalance
        assert await engine.sync(group, sync_request(back.member_id, instance="i-1")) == (
            ErrorCode.none,
            b"P",
        )
        assert engine.heartbeat(group, 1, first.member_id, "i-1") is ErrorCode.fenced_instance_id
        assert (
            engine.validate_commit(group, 1, first.member_id, "i-1") is ErrorCode.fenced_instance_id
        )
        assert engine.leave(group, first.member_id, "i-1") is ErrorCode.fenced_instance_id

    run(body)


def test_join_validation_errors() -> None:
    async def body(engine: RebalanceEngine, persisted: list) -> None:
        group = Group("g")
        bad_session = await engine.join(group, request(session_ms=1))
        assert bad_session.error is ErrorCode.invalid_session_timeout
        unknown = await engine.join(group, request(member_id="ghost"))
        assert unknown.error is ErrorCode.unknown_member_id
        a = await join_new(engine, group)
        await a
        mismatch = await engine.join(
            group,
            JoinRequest("", None, "c", "h", 10_000, 300, "connect", [("x", b"")], True),
        )
        assert mismatch.error is ErrorCode.inconsistent_group_protocol

    run(body)
