"""no-epoch-fencing: after the controller moves leadership to another replica (a new
leader epoch), the deposed leader's ReplicaManager still appends and acknowledges an
acks=1 produce with the bug; without it the produce is refused and nothing written."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker import bugs
from broker.errors import ErrorCode, KafkaError
from broker.replication.partition import ReplicatedPartition
from broker.server.replica_manager import ReplicaManager
from broker.server.topics import PartitionAssignment
from tests.broker.batches import make_batch, read_values
from tests.broker.managers import replica_manager

REPLICAS = [1, 2, 3]


@pytest.fixture
def deposed(tmp_path: Path) -> Iterator[ReplicaManager]:
    """Node 1's ReplicaManager, whose replica of t-0 led epoch 0 and lost it to node 2."""
    with replica_manager(tmp_path) as rm:
        log = rm.partitions[("t", 0)].log
        assignment = PartitionAssignment(REPLICAS, 1, 0, REPLICAS)
        partition = ReplicatedPartition("t", 0, log, assignment, 1)
        partition.reassign(PartitionAssignment(REPLICAS, 2, 1, [2, 3]))
        rm.partitions[("t", 0)] = partition
        try:
            yield rm
        finally:
            bugs.enable([])


@pytest.mark.parametrize("bug", [True, False], ids=["no-epoch-fencing", "correct"])
def test_deposed_leader_accepts_a_write(deposed: ReplicaManager, bug: bool) -> None:
    bugs.enable(["no-epoch-fencing"] if bug else [])
    log = deposed.partitions[("t", 0)].log

    async def produce() -> int:
        result = await deposed.append_records("t", 0, make_batch([b"split"]), acks=1)
        return result.first_offset

    if bug:
        assert asyncio.run(produce()) == 0  # acknowledged by a replica that no longer leads
        assert read_values(log.read(0, 1 << 20, log.next_offset)) == [(0, b"split")]
    else:
        with pytest.raises(KafkaError) as refused:
            asyncio.run(produce())
        assert refused.value.code is ErrorCode.not_leader_or_follower
        assert log.next_offset == 0
