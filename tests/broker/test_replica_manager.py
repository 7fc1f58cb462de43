"""The ReplicaManager's internal API: transactions, the last stable offset and
read_committed reads, as the coordinators drive them."""

from __future__ import annotations

import asyncio
from pathlib import Path

from broker.log.ledger import FsyncLedger
from broker.server.replica_manager import FetchRequestPartition, ReplicaManager
from broker.server.topics import TopicStore
from broker.server_properties import load_config
from tests.broker.batches import make_batch, read_values


def manager(tmp_path: Path) -> ReplicaManager:
    config = load_config(1, "127.0.0.1:0", tmp_path, None, [])
    ledger = FsyncLedger(tmp_path)
    rm = ReplicaManager(config, ledger, TopicStore(tmp_path, ledger))
    rm.create_topic("t", 1, 1, {})
    return rm


def read(rm: ReplicaManager, committed: bool):
    return rm.read(
        FetchRequestPartition("t", 0, 0, 1 << 20), 1 << 20, read_committed=committed, min_one=True
    )


def test_open_transaction_bounds_read_committed_until_its_marker(tmp_path: Path) -> None:
    rm = manager(tmp_path)

    async def scenario() -> None:
        await rm.append_records("t", 0, make_batch([b"before"]), acks=-1)
        await rm.append_records(
            "t", 0, make_batch([b"txn-a"], 9, 0, 0, transactional=True), acks=-1
        )
        await rm.append_records("t", 0, make_batch([b"plain"]), acks=-1)
        uncommitted, committed = read(rm, False), read(rm, True)
        assert (uncommitted.high_watermark, uncommitted.last_stable_offset) == (3, 1)
        assert [v for _, v in read_values(uncommitted.records)] == [b"before", b"txn-a", b"plain"]
        assert [v for _, v in read_values(committed.records)] == [b"before"]
        assert await rm.append_marker("t", 0, 9, 0, False, coordinator_epoch=0) == 3
        after = read(rm, True)
        assert after.last_stable_offset == 4
        assert [(a.producer_id, a.first_offset) for a in after.aborted] == [(9, 1)]
        assert [v for _, v in read_values(after.records)] == [b"before", b"txn-a", b"plain"]
        batches = list(rm.read_batches("t", 0, 0))
        assert [h.is_control for h, _ in batches] == [False, False, False, True]

    asyncio.run(scenario())


def test_internal_topics_are_created_once(tmp_path: Path) -> None:
    rm = manager(tmp_path)
    first = rm.ensure_internal_topic("__transaction_state", 3, {"cleanup.policy": "compact"})
    again = rm.ensure_internal_topic("__transaction_state", 5, {})
    assert first is again and len(first.partitions) == 3 and first.internal
