"""A produce request to several partitions appends every batch first and then
waits for all of them together, under the request's own timeout (Kafka's
DelayedProduce): a partition whose followers lag does not hold back the
appends of the others, and each partition gets its own answer."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from broker.api.produce import handle_produce
from broker.errors import ErrorCode
from broker.replication.partition import ReplicatedPartition
from broker.server.replica_manager import ReplicaManager
from broker.server.topics import PartitionAssignment
from tests.broker.batches import make_batch
from tests.broker.managers import replica_manager

REPLICAS = [1, 2, 3]


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[ReplicaManager]:
    """Node 1's ReplicaManager, leading both partitions of t with the whole ISR."""
    with replica_manager(tmp_path, partitions=2) as rm:
        for index in (0, 1):
            log = rm.partitions[("t", index)].log
            assignment = PartitionAssignment(REPLICAS, 1, 0, REPLICAS)
            rm.partitions[("t", index)] = ReplicatedPartition("t", index, log, assignment, 1)
        yield rm


class Verifier:
    async def check_append(self, *_: object) -> None:
        """No transactions here: every batch may be appended."""


def request(timeout_s: float) -> SimpleNamespace:
    data = [SimpleNamespace(index=i, records=make_batch([f"v{i}".encode()])) for i in (0, 1)]
    return SimpleNamespace(
        transactional_id=None,
        acks=-1,
        timeout=timedelta(seconds=timeout_s),
        topic_data=[SimpleNamespace(name="t", partition_data=data)],
    )


def test_all_partitions_append_first_then_wait_together(manager: ReplicaManager) -> None:
    ctx = SimpleNamespace(broker=SimpleNamespace(replica_manager=manager, txn_verifier=Verifier()))
    p0, p1 = manager.partitions[("t", 0)], manager.partitions[("t", 1)]

    async def scenario() -> dict:
        pending = asyncio.ensure_future(handle_produce(ctx, request(0.5)))  # type: ignore[arg-type]
        await asyncio.sleep(0.05)
        assert not pending.done()
        assert (p0.log.next_offset, p1.log.next_offset) == (1, 1)  # both appended already
        for follower in (2, 3):  # partition 0 replicates; partition 1's followers never fetch
            p0.update_follower(follower, 1)  # type: ignore[attr-defined]
        response = await asyncio.wait_for(pending, 5)
        assert response is not None
        return response

    answers = asyncio.run(scenario())["responses"][0]["partition_responses"]
    assert [(a["index"], a["error_code"], a["base_offset"]) for a in answers] == [
        (0, ErrorCode.none, 0),
        (1, ErrorCode.request_timed_out, 0),
    ]
