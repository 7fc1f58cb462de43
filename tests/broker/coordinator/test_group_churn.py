"""Seeded churn against the rebalance protocol: simulated consumers that behave
like librdkafka's (join, sync, heartbeat; rejoin on REBALANCE_IN_PROGRESS,
ILLEGAL_GENERATION and UNKNOWN_MEMBER_ID) leave and come back at random while
invariants are checked; when the churn stops the group must converge to one
Stable generation holding every consumer, each with the leader's assignment."""

from __future__ import annotations

import asyncio
import random

import pytest

from broker.coordinator.group.membership import (
    GroupConfig,
    JoinRequest,
    RebalanceEngine,
    SyncRequest,
)
from broker.coordinator.group.state import Group, GroupState
from broker.errors import ErrorCode

G = GroupState
CONSUMERS = 4
CHURN_SECONDS = 3.0
REJOIN = (ErrorCode.rebalance_in_progress, ErrorCode.illegal_generation)


class Consumer:
    def __init__(self, engine: RebalanceEngine, group: Group, rng: random.Random) -> None:
        self.engine, self.group, self.rng = engine, group, rng
        self.member_id = ""
        self.generation = -1
        self.settled = False
        self.churn = True

    def request(self) -> JoinRequest:
        return JoinRequest(
            self.member_id,
            None,
            "sim",
            "/127.0.0.1",
            2000,
            1000,
            "consumer",
            [("range", b"m")],
            True,
        )

    async def run(self) -> None:
        while True:
            self.settled = False
            result = await self.engine.join(self.group, self.request())
            if result.error is ErrorCode.member_id_required:
                self.member_id = result.member_id
                continue
            if result.error is ErrorCode.unknown_member_id:
                self.member_id = ""
                continue
            assert result.error is ErrorCode.none, result.error
            generation = result.generation
            plan = {m: f"{generation}:{m}".encode() for m, _, _ in result.members}
            error, assignment = await self.engine.sync(
                self.group, SyncRequest(generation, self.member_id, None, "consumer", "range", plan)
            )
            if error in REJOIN:
                continue
            if error is ErrorCode.unknown_member_id:
                self.member_id = ""
                continue
            assert error is ErrorCode.none, error
            assert assignment == f"{generation}:{self.member_id}".encode()  # this generation's plan
            self.generation, self.settled = generation, True
            await self.heartbeat_until_rejoin()

    async def heartbeat_until_rejoin(self) -> None:
        while True:
            await asyncio.sleep(0.02)
            if self.churn and self.rng.random() < 0.02:
                assert self.engine.leave(self.group, self.member_id, None) is ErrorCode.none
                self.member_id, self.settled = "", False
                await asyncio.sleep(self.rng.uniform(0, 0.2))
                return
            error = self.engine.heartbeat(self.group, self.generation, self.member_id, None)
            if error is ErrorCode.none:
                continue
            if error is ErrorCode.unknown_member_id:
                self.member_id = ""
            else:
                assert error in REJOIN, error
            return


async def watch(group: Group, violations: list[str]) -> None:
    last_generation = group.generation
    while True:
        if group.generation < last_generation:
            violations.append(f"generation went back from {last_generation} to {group.generation}")
        last_generation = group.generation
        if (
            group.state in (G.COMPLETING_REBALANCE, G.STABLE)
            and group.leader_id not in group.members
        ):
            violations.append(f"{group.state.value} without a leader among the members")
        if group.state is G.STABLE and any(m.join_waiter for m in group.members.values()):
            violations.append("Stable while a member waits in JoinGroup")
        await asyncio.sleep(0.005)


async def scenario(seed: int) -> None:
    config = GroupConfig(min_session_timeout_ms=100, initial_rebalance_delay_ms=50)
    engine = RebalanceEngine(config, _nothing)
    group = Group("churn")
    rng = random.Random(seed)
    consumers = [Consumer(engine, group, rng) for _ in range(CONSUMERS)]
    violations: list[str] = []
    tasks = [asyncio.create_task(c.run()) for c in consumers]
    watcher = asyncio.create_task(watch(group, violations))
    try:
        await asyncio.sleep(CHURN_SECONDS)
        for consumer in consumers:
            consumer.churn = False
        while True:  # converge: bounded by the caller's timeout
            failed = [t for t in tasks if t.done()]
            if failed:
                failed[0].result()  # re-raises a client-side assertion
            members = {c.member_id for c in consumers}
            if (
                group.state is G.STABLE
                and set(group.members) == members
                and all(c.settled and c.generation == group.generation for c in consumers)
            ):
                break
            await asyncio.sleep(0.02)
        assert violations == []
    finally:
        for task in [*tasks, watcher]:
            task.cancel()
        await asyncio.gather(*tasks, watcher, return_exceptions=True)


async def _nothing(group: Group) -> None:
    """Persistence is covered elsewhere; this test is about the protocol."""


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_churning_consumers_converge_to_one_stable_generation(seed: int) -> None:
    asyncio.run(asyncio.wait_for(scenario(seed), 60))
