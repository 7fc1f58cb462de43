"""Loading coordinator shards from their internal partitions.

Runs the real broker components in-process (storage, replica manager,
coordinators) so that the moments in between are exact: a shard half-way
through its replay, and a coordinator that dies between PrepareCommit and its
markers (the completion task is cancelled before it writes a single marker, as
if the process had died there).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from broker.broker import Broker
from broker.coordinator.group.offsets import CommittedOffset
from broker.coordinator.service import CoordinatorService
from broker.coordinator.txn.state import TransactionState
from broker.errors import KafkaError
from broker.log.batch import CONTROL_COMMIT, control_type
from broker.server_properties import load_config
from tests.broker.batches import make_batch

pytestmark = [pytest.mark.broker]
SETTINGS = ["offsets.topic.num.partitions=3", "transaction.state.log.num.partitions=3"]


async def open_broker(
    data_dir: Path, settings: list[str] = SETTINGS
) -> tuple[Broker, CoordinatorService]:
    broker = Broker(load_config(1, "127.0.0.1:0", data_dir, None, settings))
    broker.replica_manager.open_all(clean=False)
    service = broker.coordinators
    await service.start()
    return broker, service


async def close_broker(broker: Broker, service: CoordinatorService) -> None:
    await service.stop()
    broker.replica_manager.close()
    broker.ledger.close()


async def scenario(data_dir: Path) -> None:
    broker, service = await open_broker(data_dir)
    manager = broker.replica_manager
    manager.create_topic("d", 2, 1, {})
    txn = service.txn
    pid, epoch = await txn.init_producer_id("rf", 60_000, -1, -1)
    await txn.add_partitions("rf", pid, epoch, {("d", 0), ("d", 1)})
    for partition in (0, 1):
        batch = make_batch([b"x", b"y"], pid, epoch, 0, transactional=True)
        await manager.append_records("d", partition, batch, -1)
    await txn.end_txn("rf", pid, epoch, commit=True)  # PrepareCommit is durable
    txn.runtime.unload_all()  # ...and the coordinator dies before any marker
    assert manager.partition("d", 0).last_stable_offset == 0
    await close_broker(broker, service)

    broker, service = await open_broker(data_dir)
    manager = broker.replica_manager
    shard = service.txn.runtime.shard_for("rf")
    for _ in range(200):
        if shard.transactions["rf"].state is TransactionState.COMPLETE_COMMIT:
            break
        await asyncio.sleep(0.01)
    assert shard.transactions["rf"].state is TransactionState.COMPLETE_COMMIT
    for partition in (0, 1):
        p = manager.partition("d", partition)
        assert p.last_stable_offset == p.high_watermark == 3
        *_, (header, raw) = manager.read_batches("d", partition, 0)
        assert header.is_control and control_type(raw) == CONTROL_COMMIT
    await close_broker(broker, service)


def test_prepared_commit_is_rolled_forward_after_a_restart(tmp_path: Path) -> None:
    asyncio.run(asyncio.wait_for(scenario(tmp_path), 30))


async def loading(data_dir: Path) -> None:
    broker, service = await open_broker(data_dir)
    group = service.group
    partition = group.runtime.partition_for("busy")
    for offset in range(300):
        await group.commit_offsets(
            "busy", -1, "", None, {("t", 0): CommittedOffset(offset, -1, "", 0)}
        )
    group.runtime.unload(partition)
    with pytest.raises(KafkaError) as info:
        group.fetch_offsets("busy", None, require_stable=False)
    assert info.value.code == ErrorCode.not_coordinator

    load = asyncio.create_task(group.runtime.load(partition))
    await asyncio.sleep(0)  # the replay yields after its first hundred batches
    with pytest.raises(KafkaError) as info:
        group.fetch_offsets("busy", None, require_stable=False)
    assert info.value.code == ErrorCode.coordinator_load_in_progress
    await load
    assert group.fetch_offsets("busy", None, require_stable=False)[("t", 0)][0] == CommittedOffset(
        299, -1, "", 0
    )
    await close_broker(broker, service)


def test_a_loading_shard_answers_load_in_progress_then_serves_the_replayed_state(
    tmp_path: Path,
) -> None:
    asyncio.run(asyncio.wait_for(loading(tmp_path), 30))


async def unreadable(data_dir: Path) -> None:
    broker, service = await open_broker(data_dir)
    group = service.group
    bad = group.runtime.partition_for("victim")
    await group.commit_offsets("victim", -1, "", None, {("t", 0): CommittedOffset(1, -1, "", 0)})
    await group.runtime.write(bad, [(b"\x00\x63future-key", b"?")])  # a key version we cannot read
    await close_broker(broker, service)

    broker, service = await open_broker(data_dir)  # starts anyway
    group = service.group
    with pytest.raises(KafkaError) as info:
        group.fetch_offsets("victim", None, require_stable=False)
    assert info.value.code == ErrorCode.not_coordinator
    others = [g for g in (f"g{i}" for i in range(20)) if group.runtime.partition_for(g) != bad]
    assert group.fetch_offsets(others[0], None, require_stable=False) == {}
    await close_broker(broker, service)


def test_an_unreadable_partition_is_not_served_but_the_broker_starts(tmp_path: Path) -> None:
    asyncio.run(asyncio.wait_for(unreadable(tmp_path), 30))


async def resized(data_dir: Path) -> None:
    broker, service = await open_broker(data_dir)
    await service.group.commit_offsets(
        "kept", -1, "", None, {("t", 0): CommittedOffset(8, -1, "", 0)}
    )
    await close_broker(broker, service)
    more = ["offsets.topic.num.partitions=7", "transaction.state.log.num.partitions=7"]
    broker, service = await open_broker(data_dir, more)
    assert service.group.runtime.num_partitions == 3  # the existing topic decides
    found = service.group.fetch_offsets("kept", None, require_stable=False)
    assert found[("t", 0)][0] == CommittedOffset(8, -1, "", 0)
    await close_broker(broker, service)


def test_a_changed_partition_count_keeps_keys_on_their_existing_partitions(tmp_path: Path) -> None:
    asyncio.run(asyncio.wait_for(resized(tmp_path), 30))


async def unwritable(data_dir: Path) -> None:
    broker, service = await open_broker(data_dir)

    async def refuse(topic: str, index: int, *_: object) -> None:
        # what a leader whose ISR is below min.insync.replicas answers
        raise KafkaError(ErrorCode.not_enough_replicas, f"{topic}-{index}: ISR [1] < 2")

    broker.replica_manager.append_records = refuse  # type: ignore[method-assign]
    with pytest.raises(KafkaError) as info:
        await service.group.commit_offsets(
            "g", -1, "", None, {("t", 0): CommittedOffset(1, -1, "", 0)}
        )
    assert info.value.code == ErrorCode.coordinator_not_available
    with pytest.raises(KafkaError) as info:
        await service.txn.init_producer_id("tx", 60_000, -1, -1)
    assert info.value.code == ErrorCode.coordinator_not_available
    assert service.group.fetch_offsets("g", None, require_stable=False) == {}
    await close_broker(broker, service)


def test_failed_internal_appends_become_retriable_coordinator_errors(tmp_path: Path) -> None:
    asyncio.run(asyncio.wait_for(unwritable(tmp_path), 30))
