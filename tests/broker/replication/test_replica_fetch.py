"""The leader's side of a follower's Fetch: the fetch offset is the follower's
position when the request arrives, and only then. A request parked for data and
read again on an append says nothing new about the follower — taking its stale
offset again once put a paused follower, just shrunk out of the ISR, straight back
in (Kafka's DelayedFetch likewise does not update the follower's state)."""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from broker.config import TOPIC_KEYS
from broker.log.ledger import FsyncLedger
from broker.log.log import Log
from broker.replication.partition import ReplicatedPartition
from broker.replication.replica_fetch import serve_replica_fetch
from broker.server.topics import PartitionAssignment
from tests.broker.batches import make_batch

DEFAULTS = {name: key.default for name, key in TOPIC_KEYS.items()}


def fetch_request(replica: int, offset: int, wait_s: float, log_start: int = 0) -> Any:
    """A follower's fetch with no last fetched epoch (its log is a prefix of ours)."""
    partition = SimpleNamespace(
        partition=0,
        fetch_offset=offset,
        current_leader_epoch=0,
        last_fetched_epoch=-1,
        log_start_offset=log_start,
        partition_max_bytes=1 << 20,
    )
    return SimpleNamespace(
        replica_id=replica,
        max_wait=datetime.timedelta(seconds=wait_s),
        topics=[SimpleNamespace(topic="t", partitions=[partition])],
    )


def test_a_parked_fetch_woken_by_an_append_does_not_count_as_a_new_fetch(
    tmp_path: Path,
) -> None:
    ledger = FsyncLedger(tmp_path)
    log = Log.open(tmp_path / "t-0", dict(DEFAULTS), ledger, clean=True)
    expansions: list[int] = []
    leader = ReplicatedPartition(
        "t",
        0,
        log,
        PartitionAssignment([1, 2, 3], 1, 0, [1, 2, 3]),
        1,
        on_caught_up=lambda _p, replica: expansions.append(replica),
    )
    manager = SimpleNamespace(partitions={("t", 0): leader})
    try:
        leader.log.append(bytearray(make_batch([b"before"])), 0)
        leader.update_follower(2, 1)
        leader.update_follower(3, 1)
        assert leader.high_watermark == 1

        async def scenario() -> dict[str, Any]:
            parked = asyncio.create_task(serve_replica_fetch(manager, fetch_request(2, 1, 5)))
            await asyncio.sleep(0.05)  # follower 2 is caught up, its fetch waits for data
            assert not parked.done()
            # follower 2 stops (paused), is shrunk out of the ISR; a write arrives that
            # follower 3 has not fetched yet, so the HW stays at 1
            leader.reassign(PartitionAssignment([1, 2, 3], 1, 0, [1, 3]))
            leader.log.append(bytearray(make_batch([b"during"])), 0)
            leader.maybe_advance_hw()
            return await asyncio.wait_for(parked, 5)

        answer = asyncio.run(scenario())
        (served,) = answer["responses"][0]["partitions"]
        assert served["records"] and served["high_watermark"] == 1
        assert expansions == [], "a parked request re-read proposed an ISR expansion"
        assert leader.follower_leo[2] == 1
    finally:
        log.close()
        ledger.close()


def test_a_parked_fetch_answers_at_once_when_the_log_start_passes_the_followers(
    tmp_path: Path,
) -> None:
    ledger = FsyncLedger(tmp_path)
    log = Log.open(tmp_path / "t-0", dict(DEFAULTS), ledger, clean=True)
    leader = ReplicatedPartition("t", 0, log, PartitionAssignment([1, 2], 1, 0, [1, 2]), 1)
    manager = SimpleNamespace(partitions={("t", 0): leader})
    try:
        leader.log.append(bytearray(make_batch([b"a", b"b"])), 0)
        leader.update_follower(2, 2, log_start=0)
        assert leader.high_watermark == 2

        async def scenario() -> dict[str, Any]:
            parked = asyncio.create_task(serve_replica_fetch(manager, fetch_request(2, 2, 5)))
            await asyncio.sleep(0.05)
            assert not parked.done()
            leader.delete_records_on_leader(2)
            return await asyncio.wait_for(parked, 1)

        answer = asyncio.run(scenario())
        (served,) = answer["responses"][0]["partitions"]
        assert (served["records"], served["log_start_offset"]) == (b"", 2)
        assert leader.follower_start[2] == 0  # the parked request said nothing new
    finally:
        log.close()


def test_a_followers_fetch_does_not_wake_the_others_parked_fetches(tmp_path: Path) -> None:
    """A follower's position (and the HW it advances) is no news for another
    follower parked in a fetch (Kafka's DelayedFetch completes on data, errors, a
    diverging epoch); an append is."""
    ledger = FsyncLedger(tmp_path)
    log = Log.open(tmp_path / "t-0", dict(DEFAULTS), ledger, clean=True)
    leader = ReplicatedPartition("t", 0, log, PartitionAssignment([1, 2, 3], 1, 0, [1, 2, 3]), 1)
    try:
        leader.log.append(bytearray(make_batch([b"a"])), 0)
        leader.maybe_advance_hw()

        async def scenario() -> None:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            leader.watch_data(waiter)  # follower 3, parked at the log end
            leader.update_follower(2, 1)
            leader.update_follower(3, 1)
            assert leader.high_watermark == 1
            assert not waiter.done(), "a follower's fetch woke another's"
            leader.log.append(bytearray(make_batch([b"b"])), 0)
            leader.maybe_advance_hw()
            assert waiter.done()

        asyncio.run(scenario())
    finally:
        log.close()
        ledger.close()
