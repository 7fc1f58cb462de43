"""Three controllers on real asyncio drivers and the real clock, wired by an in-process
channel that delivers through the event loop: a leader is elected and a topic created
through the active controller reaches every node."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from broker.controller.quorum_controller import QuorumController
from broker.controller.requests import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    ControllerConfig,
    CreatableTopic,
)
from broker.raft.client import RaftClient, RaftConfig
from broker.raft.driver import MonotonicClock, RaftDriver, RaftMessageQueue
from broker.raft.file_log import FileLog
from broker.raft.file_quorum_store import FileQuorumStateStore
from broker.raft.messages import BeginQuorumEpochRequest, Envelope, FetchRequest, FetchResponse
from tests.broker.raft.test_client import Outbox


class LoopChannel:
    """Delivers each envelope on the next turn of the loop, like a socket would."""

    def __init__(self, queues: dict[int, RaftMessageQueue]) -> None:
        self.queues = queues

    def send(self, envelope: Envelope) -> None:
        target = self.queues[envelope.destination]
        asyncio.get_running_loop().call_soon(target.add, envelope)


async def until(predicate: Callable[[], object], seconds: float = 20.0) -> None:
    for _ in range(int(seconds / 0.02)):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached")


@pytest.mark.slow
def test_controllers_on_asyncio_drivers_elect_and_create_a_topic(tmp_path: Path) -> None:
    async def scenario() -> None:
        clock = MonotonicClock()
        voters = frozenset({1, 2, 3})
        queues = {node: RaftMessageQueue() for node in voters}
        drivers: dict[int, RaftDriver] = {}
        channel = LoopChannel(queues)
        controllers = {}
        config = RaftConfig(election_timeout_ms=200, fetch_timeout_ms=400, request_timeout_ms=300)
        for node in sorted(voters):
            client = RaftClient(
                node,
                voters,
                FileLog(tmp_path / f"n{node}" / "log"),
                FileQuorumStateStore(tmp_path / f"n{node}" / "quorum-state"),
                channel,
                clock,
                random.Random(node),
                config,
            )
            controller = QuorumController(
                node, client, clock, random.Random(node), ControllerConfig()
            )
            client.register(controller)
            controllers[node] = controller
            drivers[node] = RaftDriver(client, queues[node], on_tick=controller.poll)
        for driver in drivers.values():
            driver.start()
        try:
            await until(lambda: any(c.active for c in controllers.values()))
            active = next(c for c in controllers.values() if c.active)
            for broker in (1, 2, 3):
                reg = await asyncio.wrap_future(
                    active.register_broker(BrokerRegistrationRequest(broker, f"i{broker}", "h", 1))
                )
                offset = active.loader.image.offset  # past our registration: caught up
                beat = BrokerHeartbeatRequest(broker, reg.broker_epoch, offset)  # type: ignore[attr-defined]
                await asyncio.wrap_future(active.broker_heartbeat(beat))
            results = await asyncio.wrap_future(active.create_topics([CreatableTopic("t", 3, 3)]))
            assert results[0].error_code is ErrorCode.none  # type: ignore[index]
            await until(lambda: all(c.loader.image.topic("t") for c in controllers.values()))
        finally:
            for driver in drivers.values():
                await driver.stop()

    async def bounded() -> None:
        async with asyncio.timeout(60):  # a hang fails the test instead of stalling the suite
            await scenario()

    asyncio.run(bounded())


def node_1_on_a_slow_tick(
    tmp_path: Path, voters: frozenset[int]
) -> tuple[RaftClient, Outbox, RaftMessageQueue, RaftDriver]:
    """Node 1 of ``voters`` over files, on a driver whose tick comes once, at the
    start: what it does after that, it does on messages or held fetches' waits."""
    queue, outbox = RaftMessageQueue(), Outbox()
    client = RaftClient(
        1,
        voters,
        FileLog(tmp_path / "log"),
        FileQuorumStateStore(tmp_path / "quorum-state"),
        outbox,
        MonotonicClock(),
        random.Random(1),
    )
    return client, outbox, queue, RaftDriver(client, queue, tick_ms=60_000)


def test_a_follower_on_the_driver_fetches_again_as_soon_as_it_is_answered(
    tmp_path: Path,
) -> None:
    """The driver polls the client after each batch of messages, not only on its
    tick: an answered fetch is followed by the next one at once."""

    def fetches(outbox: Outbox) -> list[Envelope]:
        return [e for e in outbox.sent if isinstance(e.body, FetchRequest)]

    async def scenario() -> None:
        _, outbox, queue, driver = node_1_on_a_slow_tick(tmp_path, frozenset({1, 2, 3}))
        driver.start()
        queue.add(Envelope(3, 1, 1, BeginQuorumEpochRequest(3, 1)))  # 3 leads epoch 1
        try:
            await until(lambda: len(fetches(outbox)) == 1, 5)
            first = fetches(outbox)[0]
            queue.add(Envelope(3, 1, first.correlation_id, FetchResponse(ErrorCode.none, 3, 1)))
            await until(lambda: len(fetches(outbox)) == 2, 5)
        finally:
            await driver.stop()

    asyncio.run(scenario())


def test_the_driver_answers_a_held_fetch_when_its_wait_runs_out(tmp_path: Path) -> None:
    """Not at the driver's next tick: the replica's request timeout counts from
    the end of the wait."""

    async def scenario() -> None:
        client, outbox, queue, driver = node_1_on_a_slow_tick(tmp_path, frozenset({1}))
        driver.start()
        try:
            await until(lambda: client.is_ready_leader(), 5)
            caught_up = FetchRequest(4, client.epoch, client.log.end_offset, client.epoch, 512, 200)
            queue.add(Envelope(4, 1, 7, caught_up))  # an observer: the HW is news, at once
            await until(lambda: any(e.correlation_id == 7 for e in outbox.sent), 5)
            queue.add(Envelope(4, 1, 8, caught_up))  # nothing new: held for 200 ms
            await until(lambda: any(e.correlation_id == 8 for e in outbox.sent), 5)
        finally:
            await driver.stop()

    asyncio.run(scenario())
