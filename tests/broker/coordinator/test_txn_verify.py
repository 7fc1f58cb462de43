"""AddPartitionsToTxn v4 with ``verify_only`` (KIP-890), the question a partition
leader asks the transaction coordinator before a transactional write opens a
transaction on its partition: each partition is answered NONE only while it is in
the producer's ongoing transaction at this epoch, and asking adds nothing."""

from __future__ import annotations

from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from broker.launcher import BrokerProcess
from tests.broker.coordinator.wire_calls import add_partitions, end_txn, init_producer_id
from tests.broker.wire import WireClient, create_topic

pytestmark = [pytest.mark.broker, pytest.mark.integration]

TXN = "verified"


def verify(client: WireClient, pid: int, epoch: int, partitions: list[int]) -> dict[int, int]:
    response: Any = client.request(
        24,
        4,
        {
            "transactions": [
                {
                    "transactional_id": TXN,
                    "producer_id": pid,
                    "producer_epoch": epoch,
                    "verify_only": True,
                    "topics": [{"name": "v", "partitions": partitions}],
                }
            ]
        },
    )
    [txn] = response.results_by_transaction
    return {
        p.partition_index: p.partition_error_code for p in txn.topic_results[0].results_by_partition
    }


def test_verify_only_answers_for_the_ongoing_transaction(broker: BrokerProcess) -> None:
    client = WireClient(broker.bootstrap)
    try:
        assert create_topic(client, "v", 3).error_code == ErrorCode.none
        init = init_producer_id(client, TXN)
        pid, epoch = init.producer_id, init.producer_epoch
        assert verify(client, pid, epoch, [0]) == {0: ErrorCode.invalid_txn_state}  # none open

        assert add_partitions(client, TXN, pid, epoch, "v", [0, 1]) == {
            ("v", 0): ErrorCode.none,
            ("v", 1): ErrorCode.none,
        }
        assert verify(client, pid, epoch, [0, 1, 2]) == {
            0: ErrorCode.none,
            1: ErrorCode.none,
            2: ErrorCode.invalid_txn_state,  # asked about, not added
        }
        assert verify(client, pid, epoch, [2]) == {2: ErrorCode.invalid_txn_state}
        assert verify(client, pid, epoch - 1, [0]) == {0: ErrorCode.producer_fenced}
        assert verify(client, pid + 1, epoch, [0]) == {0: ErrorCode.invalid_producer_id_mapping}

        assert end_txn(client, TXN, pid, epoch, commit=True) == ErrorCode.none
        # Decided (PrepareCommit, then CompleteCommit): no write may join it any more.
        assert verify(client, pid, epoch, [0]) == {0: ErrorCode.invalid_txn_state}
    finally:
        client.close()
