"""Kafka's VerificationGuard: a transactional write that opens a transaction
on a partition is verified with the coordinator first, and a marker for its
producer landing on the partition while the coordinator is asked (the
transaction ended meanwhile) makes the write late: it is refused, so it
cannot open a hanging transaction of its own."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.coordinator.txn.verification import TxnVerifier
from broker.errors import ErrorCode, KafkaError
from broker.server.replica_manager import ReplicaManager
from tests.broker.batches import make_batch
from tests.broker.managers import replica_manager

PID, EPOCH = 7, 0


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[ReplicaManager]:
    with replica_manager(tmp_path) as rm:
        yield rm


@pytest.mark.parametrize("marker_meanwhile", [False, True], ids=["in-time", "late"])
def test_a_marker_during_verification_refuses_the_write(
    manager: ReplicaManager, marker_meanwhile: bool
) -> None:
    log = manager.partitions[("t", 0)].log
    verifier = TxnVerifier(1, manager, None, lambda *_: (2, "n2", 9092))  # type: ignore[arg-type]

    async def coordinator(*_: object) -> ErrorCode:
        await asyncio.sleep(0)
        if marker_meanwhile:
            log.append_marker(PID, EPOCH, False, 0, 0)
        return ErrorCode.none

    verifier._ask = coordinator  # type: ignore[method-assign]
    write = make_batch([b"w"], producer_id=PID, producer_epoch=EPOCH, base_sequence=0,
                       transactional=True)  # fmt: skip

    async def check() -> None:
        await verifier.check_append("txn-1", "t", 0, write)

    if marker_meanwhile:
        with pytest.raises(KafkaError) as refused:
            asyncio.run(check())
        assert refused.value.code is ErrorCode.invalid_txn_state
    else:
        asyncio.run(check())
    verifier.close()
