"""hw-truncation (pre-KIP-101, the digest's first KIP-101 scenario): a follower holds
m1 and m2 but has only learned HW=1 when leadership changes. With the bug it cuts its
log to that HW without asking the leader, discarding m2, which the leader has and
acknowledged (lost if this follower leads next); without it, OffsetForLeaderEpoch to
the leader (a real broker process) says epoch 0 ends at 2: m2 stays and only a
stray tail the leader lacks is cut."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from broker import bugs
from broker.config import TOPIC_KEYS
from broker.launcher import BrokerProcess
from broker.log.ledger import FsyncLedger
from broker.log.log import Log
from broker.replication.fetcher import ReplicaFetchers
from broker.replication.partition import ReplicatedPartition
from broker.replication.peer_client import PeerConnection
from broker.server.topics import PartitionAssignment
from tests.broker.batches import make_batch, read_values
from tests.broker.wire import WireClient, create_topic, fetch, produce

pytestmark = [pytest.mark.broker, pytest.mark.integration]
LEADER = 1  # the single-node broker's id; its leader epoch is 0
FOLLOWER = 2


@pytest.fixture
def leader_batches(start_buggy: Callable[[list[str]], BrokerProcess]) -> tuple[str, bytes]:
    """A real leader holding m1 and m2 in epoch 0; returns its address and raw batches."""
    broker = start_buggy([])
    client = WireClient(broker.bootstrap)
    try:
        assert create_topic(client, "t").error_code == ErrorCode.none
        for value in (b"m1", b"m2"):
            assert produce(client, "t", 0, make_batch([value])).error_code == ErrorCode.none
        return broker.bootstrap, bytes(fetch(client, "t").records)
    finally:
        client.close()


@pytest.fixture
def follower(tmp_path: Path) -> Iterator[ReplicatedPartition]:
    ledger = FsyncLedger(tmp_path)
    defaults = {name: key.default for name, key in TOPIC_KEYS.items()}
    log = Log.open(tmp_path / "follower" / "t-0", defaults, ledger, clean=True)
    assignment = PartitionAssignment([LEADER, FOLLOWER], LEADER, 0, [LEADER, FOLLOWER])
    try:
        yield ReplicatedPartition("t", 0, log, assignment, FOLLOWER)
    finally:
        bugs.enable([])
        log.close()
        ledger.close()


@pytest.mark.parametrize("bug", [True, False], ids=["hw-truncation", "correct"])
def test_follower_reconciles_after_a_leader_change(
    leader_batches: tuple[str, bytes], follower: ReplicatedPartition, bug: bool
) -> None:
    bugs.enable(["hw-truncation"] if bug else [])
    address, records = leader_batches
    follower.append_as_follower(records, leader_hw=1)  # m2 copied, HW=2 not yet learned
    follower.log.append(bytearray(make_batch([b"stray"])), 0)  # a tail the leader lacks
    assert (follower.high_watermark, follower.log.next_offset) == (1, 3)
    fetchers = ReplicaFetchers(FOLLOWER, {("t", 0): follower}, lambda _: None)
    host, port = address.rsplit(":", 1)

    async def reconcile() -> None:
        connection = PeerConnection(host, int(port), "hw-truncation-test")
        try:
            await fetchers._truncate_where_needed(connection, LEADER, {("t", 0): follower})
        finally:
            connection.close()

    asyncio.run(reconcile())
    kept = read_values(follower.log.read(0, 1 << 20, follower.log.next_offset))
    if bug:
        assert kept == [(0, b"m1")]  # the acknowledged m2 discarded
    else:
        assert kept == [(0, b"m1"), (1, b"m2")]  # cut where epoch 0 ends on the leader
