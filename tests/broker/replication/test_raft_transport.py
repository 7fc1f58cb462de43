"""Three Raft clients talking over real sockets through ``RaftTransport`` and
``ControllerListener`` elect one leader and replicate its entries."""

from __future__ import annotations

import asyncio
import random

import pytest

from broker.raft.client import RaftClient, RaftConfig
from broker.raft.driver import MonotonicClock, RaftDriver, RaftMessageQueue
from broker.raft.file_quorum_store import MemoryQuorumStateStore
from broker.raft.memory_log import MemoryLog
from broker.raft.quorum_state import Role
from broker.replication.controller_listener import ControllerListener
from broker.replication.local_cluster import free_ports
from broker.replication.raft_transport import RaftTransport
from broker.replication.voters import parse_voters

RAFT_APIS = (52, 53, 54, 1, 59)


async def _quorum(
    config: RaftConfig | None = None,
) -> tuple[list[RaftClient], list[RaftDriver], list[ControllerListener]]:
    ports = free_ports(3)
    voters = parse_voters(",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(ports)))
    clients, drivers, listeners = [], [], []
    for node_id in voters:
        queue = RaftMessageQueue()
        raft_config = config or RaftConfig(election_timeout_ms=300, fetch_timeout_ms=600)
        transport = RaftTransport(node_id, voters, raft_config.request_timeout_ms, queue)
        client = RaftClient(
            node_id,
            frozenset(voters),
            MemoryLog(),
            MemoryQuorumStateStore(),
            transport,
            MonotonicClock(),
            random.Random(node_id),
            raft_config,
        )
        driver = RaftDriver(client, queue)
        listener = ControllerListener(dict.fromkeys(RAFT_APIS, transport.handle))
        await listener.start("127.0.0.1", voters[node_id].port)
        driver.start()
        clients.append(client)
        drivers.append(driver)
        listeners.append(listener)
    return clients, drivers, listeners


async def _until(condition, timeout: float = 20) -> None:  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.05)


@pytest.mark.integration
def test_election_and_replication_over_sockets() -> None:
    async def scenario() -> None:
        clients, drivers, listeners = await _quorum()
        try:
            await _until(lambda: any(c.is_ready_leader() for c in clients))
            leader = next(c for c in clients if c.is_ready_leader())
            assert [c.role for c in clients].count(Role.LEADER) == 1
            first = leader.append([b"a", b"b"])
            await _until(
                lambda: all((c.high_watermark or 0) > first + 1 for c in clients), timeout=10
            )
            for client in clients:
                assert [e.data for e in client.log.read(first, 2)] == [b"a", b"b"]
        finally:
            for driver, listener in zip(drivers, listeners, strict=True):
                await listener.stop()
                await driver.stop()

    asyncio.run(scenario())


@pytest.mark.integration
def test_an_idle_quorum_keeps_its_leader_while_its_fetches_are_held() -> None:
    """A fetch held at the leader for its whole wait (500 ms) is answered in time
    with a request timeout much shorter than that wait: the transport on both
    sides and the client count the timeout on top of the wait, and the driver
    wakes when the wait runs out rather than at its next tick."""

    async def scenario() -> None:
        clients, drivers, listeners = await _quorum(RaftConfig(request_timeout_ms=20))
        try:
            await _until(lambda: any(c.is_ready_leader() for c in clients))
            epoch = max(c.epoch for c in clients)
            await asyncio.sleep(3)
            assert [c.epoch for c in clients] == [epoch] * 3
            assert sorted(c.role.name for c in clients) == ["FOLLOWER", "FOLLOWER", "LEADER"]
        finally:
            for driver, listener in zip(drivers, listeners, strict=True):
                await listener.stop()
                await driver.stop()

    asyncio.run(scenario())
