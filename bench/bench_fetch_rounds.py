"""What one replica fetch round costs each side for partitions with nothing new.

A follower fetches every partition it has from a leader in one session, and
the leader reads every partition of the session on each fetch, so the idle
ones (most of the internal topics' 50 + 50 partitions) cost both sides on
every round. Measured in one process, without the network, on followed
partitions holding one replicated record each:

- follower: one round of a fetch loop (the partitions it follows from the
  leader, the truncation check, each partition's fetch state, the session's
  delta and the request) against a leader answering with nothing new;
- leader: one incremental fetch over the session's partitions, all caught
  up, answered at once (max wait 0).

Prints the microseconds per round for each count of partitions.

    .venv/bin/python bench/bench_fetch_rounds.py [--partitions 10,35,70] [--rounds 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder

from broker.config import TOPIC_KEYS
from broker.errors import ErrorCode
from broker.log.ledger import FsyncLedger
from broker.log.log import Log
from broker.protocol.codec import build_response
from broker.replication.fetch_session import INITIAL_EPOCH, NO_SESSION, FetchSessionCache
from broker.replication.fetcher import ReplicaFetchers
from broker.replication.partition import ReplicatedPartition
from broker.replication.replica_fetch import serve_replica_fetch
from broker.server.topics import PartitionAssignment

LEADER, FOLLOWER = 1, 2
TOPIC = "t"
DEFAULTS = {name: key.default for name, key in TOPIC_KEYS.items()}


def one_record() -> bytearray:
    """A batch of one record at offset 0, leader epoch 0, as a producer sends it."""
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    builder.append(0, 1_700_000_000_000, None, b"x", [])
    return bytearray(builder.build())


def partitions(
    root: Path, ledger: FsyncLedger, count: int, node: int
) -> dict[tuple[str, int], ReplicatedPartition]:
    """``count`` partitions led by LEADER on ``node``, with one record each."""
    out = {}
    for index in range(count):
        log = Log.open(root / f"{node}-{index}", dict(DEFAULTS), ledger, clean=True)
        assignment = PartitionAssignment([LEADER, FOLLOWER], LEADER, 0, [LEADER, FOLLOWER])
        partition = ReplicatedPartition(TOPIC, index, log, assignment, node)
        if node == LEADER:
            log.append(one_record(), 0)
            partition.update_follower(FOLLOWER, 1)
        else:
            partition.append_as_follower(bytes(one_record()), 1)
        out[(TOPIC, index)] = partition
    return out


class NothingNew:
    """A leader that answers every incremental fetch of session 1 with nothing."""

    def __init__(self) -> None:
        answer = {"throttle_time": 0, "error_code": ErrorCode.none, "session_id": 1}
        self.response = build_response(1, 12, {**answer, "responses": []})

    async def request(self, request: Any, timeout: float) -> Any:
        return self.response


async def follower_round_us(
    followed: dict[tuple[str, int], ReplicatedPartition], rounds: int
) -> float:
    """Microseconds per round of the follower's loop body over ``followed``, all
    in sync with the leader's epoch, against a leader with nothing new."""
    fetchers = ReplicaFetchers(FOLLOWER, followed, lambda node: None)
    fetchers._followed = {LEADER: dict(followed)}  # what update() takes, without its loops
    fetchers._synced = {tp: 0 for tp in followed}
    wire = NothingNew()

    async def one_round() -> None:
        parts = fetchers.followed(LEADER)
        await fetchers._truncate_where_needed(wire, LEADER, parts)  # type: ignore[arg-type]
        await fetchers._fetch_once(wire, LEADER, parts)  # type: ignore[arg-type]

    for _ in range(10):
        await one_round()
    start = time.perf_counter()
    for _ in range(rounds):
        await one_round()
    return (time.perf_counter() - start) / rounds * 1e6


def fetch_request(session: tuple[int, int], fetched: list[Any]) -> Any:
    """The follower's Fetch v12 as the leader's handler reads it: ``fetched`` are the
    partitions added to the ``session`` (id, epoch), none for an unchanged one."""
    return SimpleNamespace(
        replica_id=FOLLOWER,
        max_wait=datetime.timedelta(0),
        session_id=session[0],
        session_epoch=session[1],
        topics=[SimpleNamespace(topic=TOPIC, partitions=fetched)] if fetched else [],
        forgotten_topics_data=[],
    )


async def leader_round_us(led: dict[tuple[str, int], ReplicatedPartition], rounds: int) -> float:
    """Microseconds per incremental fetch the leader serves over ``led``, every
    partition caught up, after a full fetch opened the session."""
    manager = SimpleNamespace(partitions=led)
    sessions = FetchSessionCache()
    caught_up = [
        SimpleNamespace(
            partition=index,
            fetch_offset=1,
            current_leader_epoch=0,
            last_fetched_epoch=0,
            log_start_offset=0,
            partition_max_bytes=1 << 20,
        )
        for _, index in led
    ]
    first = fetch_request((NO_SESSION, INITIAL_EPOCH), caught_up)
    session = (await serve_replica_fetch(manager, first, sessions))["session_id"]  # type: ignore[arg-type]
    epoch = 1
    for _ in range(10):
        await serve_replica_fetch(manager, fetch_request((session, epoch), []), sessions)  # type: ignore[arg-type]
        epoch += 1
    start = time.perf_counter()
    for _ in range(rounds):
        await serve_replica_fetch(manager, fetch_request((session, epoch), []), sessions)  # type: ignore[arg-type]
        epoch += 1
    return (time.perf_counter() - start) / rounds * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", default="10,35,70")
    parser.add_argument("--rounds", type=int, default=3000)
    args = parser.parse_args()
    counts = [int(c) for c in args.partitions.split(",")]
    print(
        f"command: .venv/bin/python bench/bench_fetch_rounds.py --partitions {args.partitions} "
        f"--rounds {args.rounds}"
    )
    print("| partitions | follower's round (us) | leader's fetch (us) |")
    print("|---|---|---|")
    for count in counts:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            ledger = FsyncLedger(root)
            followed = partitions(root, ledger, count, FOLLOWER)
            led = partitions(root, ledger, count, LEADER)
            try:
                follower = asyncio.run(follower_round_us(followed, args.rounds))
                leader = asyncio.run(leader_round_us(led, args.rounds))
            finally:
                for p in (*followed.values(), *led.values()):
                    p.log.close()
                ledger.close()
        print(f"| {count} | {follower:.0f} | {leader:.0f} |")


if __name__ == "__main__":
    main()
