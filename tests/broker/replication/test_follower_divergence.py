"""The follower's fetch carries the epoch of its last record, and the leader
checks it (Kafka's diverging epoch, the modern Fetch path): a follower whose
log parts from the leader's before its fetch offset gets the epoch and
offset where they part, no records, and its position does not count for
the high watermark until it has truncated there. An answer to a request
sent for another leader epoch than the partition has now is dropped."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from broker.config import TOPIC_KEYS
from broker.log.ledger import FsyncLedger
from broker.log.log import Log
from broker.replication.fetcher import ReplicaFetchers, handle_out_of_range
from broker.replication.partition import ReplicatedPartition
from broker.replication.replica_fetch import serve_replica_fetch
from broker.server.topics import PartitionAssignment
from tests.broker.batches import make_batch, read_values

DEFAULTS = {name: key.default for name, key in TOPIC_KEYS.items()}
LEADER, FOLLOWER = 1, 2
TP = ("t", 0)


def namespace(value: Any) -> Any:
    """A response dict as the attribute objects the fetcher reads."""
    if isinstance(value, dict):
        answer = {k: namespace(v) for k, v in value.items()}
        if "partition_index" in answer:  # a partition's answer: Kafka's default epoch
            answer.setdefault("diverging_epoch", SimpleNamespace(epoch=-1, end_offset=-1))
        return SimpleNamespace(**answer)
    if isinstance(value, list):
        return [namespace(v) for v in value]
    return value


class Connection:
    """The leader's Fetch handler in place of the network; ``during`` runs while
    the request is in flight."""

    def __init__(self, leader: ReplicatedPartition, during: Any = None) -> None:
        self.manager = SimpleNamespace(partitions={TP: leader})
        self.during = during

    async def request(self, request: Any, timeout: float) -> Any:
        answer = await serve_replica_fetch(self.manager, request)
        if self.during is not None:
            self.during()
        return namespace(answer)


@pytest.fixture
def logs(tmp_path: Path) -> Iterator[tuple[ReplicatedPartition, ReplicatedPartition]]:
    """The leader holds m1, m2 (epoch 0) and m3 (epoch 2, its epoch now); the
    follower holds m1, m2 and x, written in epoch 1 by a leader that lost it."""
    ledger = FsyncLedger(tmp_path)
    opened = []

    def partition(node: int, values: list[tuple[bytes, int]], epoch: int) -> ReplicatedPartition:
        log = Log.open(tmp_path / f"n{node}" / "t-0", dict(DEFAULTS), ledger, clean=True)
        opened.append(log)
        for value, stamped in values:
            log.append(bytearray(make_batch([value])), stamped)
        isr = [LEADER, FOLLOWER]
        return ReplicatedPartition("t", 0, log, PartitionAssignment(isr, LEADER, epoch, isr), node)

    leader = partition(LEADER, [(b"m1", 0), (b"m2", 0), (b"m3", 2)], 2)
    follower = partition(FOLLOWER, [(b"m1", 0), (b"m2", 0), (b"x", 1)], 2)
    try:
        yield leader, follower
    finally:
        for log in opened:
            log.close()
        ledger.close()


def fetchers_of(follower: ReplicatedPartition) -> ReplicaFetchers:
    fetchers = ReplicaFetchers(FOLLOWER, {TP: follower}, lambda _: None)
    fetchers._synced[TP] = follower.leader_epoch  # reconciled by OffsetForLeaderEpoch
    return fetchers


def test_a_diverged_follower_truncates_and_does_not_move_the_hw(
    logs: tuple[ReplicatedPartition, ReplicatedPartition],
) -> None:
    leader, follower = logs
    fetchers = fetchers_of(follower)
    connection = Connection(leader)

    async def fetch() -> None:
        await fetchers._fetch_once(connection, LEADER, {TP: follower})  # type: ignore[arg-type]

    asyncio.run(fetch())
    assert leader.high_watermark == 0  # the follower's offset 3 did not count
    assert follower.log.next_offset == 2  # cut where epoch 0 ends on the leader
    asyncio.run(fetch())
    values = read_values(follower.log.read(0, 1 << 20, follower.log.next_offset))
    assert values == [(0, b"m1"), (1, b"m2"), (2, b"m3")]
    asyncio.run(fetch())
    assert leader.high_watermark == 3


def test_an_answer_for_an_old_leader_epoch_is_dropped(
    logs: tuple[ReplicatedPartition, ReplicatedPartition],
) -> None:
    leader, follower = logs
    follower.truncate_to(2)  # agrees with the leader: the answer would bring m3
    fetchers = fetchers_of(follower)

    def new_epoch() -> None:
        isr = [LEADER, FOLLOWER]
        follower.reassign(PartitionAssignment(isr, LEADER, 3, isr))

    connection = Connection(leader, during=new_epoch)
    asyncio.run(fetchers._fetch_once(connection, LEADER, fetchers.followed(LEADER)))  # type: ignore[arg-type]
    assert follower.log.next_offset == 2


def test_a_follower_behind_the_leaders_log_start_starts_over_there(
    logs: tuple[ReplicatedPartition, ReplicatedPartition],
) -> None:
    _, follower = logs
    handle_out_of_range(TP, follower, 7)  # the leader deleted everything below 7
    log = follower.log
    assert (log.log_start_offset, log.next_offset, follower.high_watermark) == (7, 7, 7)
    assert log.epochs.latest_epoch == -1 and log.producer_state.map_end_offset == 7
    handle_out_of_range(TP, follower, 3)  # a log start below our end: nothing to do
    assert log.next_offset == 7


def test_a_follower_that_led_an_empty_epoch_drops_it_and_catches_up(
    logs: tuple[ReplicatedPartition, ReplicatedPartition],
) -> None:
    """It led epoch 1 without appending anything: its epoch cache names an
    epoch the leader never saw, ending where its log ends. The diverging
    answer cuts nothing but that entry, and the next fetch brings m3."""
    leader, follower = logs
    follower.truncate_to(2)
    follower.log.epochs.assign(1, 2)  # became leader of epoch 1 at offset 2, wrote nothing
    fetchers = fetchers_of(follower)
    connection = Connection(leader)

    async def fetch() -> None:
        await fetchers._fetch_once(connection, LEADER, {TP: follower})  # type: ignore[arg-type]

    for _ in range(3):
        asyncio.run(fetch())
    assert follower.log.next_offset == 3 and follower.log.epochs.latest_epoch == 2
