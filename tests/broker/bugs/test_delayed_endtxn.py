"""delayed-endtxn (KAFKA-17754): a transactional write that reaches its partition after
the client aborted its transaction is appended anyway, opens a transaction of its own
there, and the producer's next transaction's COMMIT marker commits it: an aborted
write becomes visible to read_committed readers (G1a). Without the bug the leader asks
the coordinator first (KIP-890) and refuses the late write with INVALID_TXN_STATE.

Exact requests over the wire, so the late write can be sent exactly when it is late."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from broker.launcher import BrokerProcess
from tests.broker.batches import make_batch, read_values
from tests.broker.coordinator.wire_calls import add_partitions, end_txn, init_producer_id
from tests.broker.wire import WireClient, create_topic, fetch
from tests.eventually import eventually

pytestmark = [pytest.mark.broker, pytest.mark.integration]

TXN_ID = "late"
TOPIC = "late"


def produce_txn(client: WireClient, batch: bytes) -> Any:
    """A transactional Produce v9, naming its transactional id as clients do."""
    response = client.request(
        0,
        9,
        {
            "transactional_id": TXN_ID,
            "acks": -1,
            "timeout": 10_000,
            "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}],
        },
    )
    return response.responses[0].partition_responses[0]


def add_partition_when_done(client: WireClient, pid: int, epoch: int) -> None:
    """AddPartitionsToTxn, retried while the previous transaction's markers are written."""

    def added() -> dict[tuple[str, int], int] | None:
        codes = add_partitions(client, TXN_ID, pid, epoch, TOPIC, [0])
        return None if codes[(TOPIC, 0)] == ErrorCode.concurrent_transactions else codes

    codes = eventually(added, 10, what="the previous transaction never completed")
    assert codes == {(TOPIC, 0): ErrorCode.none}


def committed_values(client: WireClient) -> list[bytes]:
    """What a read_committed reader sees once no transaction is open."""

    def settled() -> Any:
        answer = fetch(client, TOPIC, read_committed=True)
        return answer if answer.last_stable_offset == answer.high_watermark else None

    answer = eventually(settled, 10, what="a transaction stayed open")
    assert not answer.aborted_transactions  # no aborted transaction wrote here
    return [v for _, v in read_values(answer.records or b"")]


@pytest.mark.parametrize("bug", [True, False], ids=["delayed-endtxn", "correct"])
def test_a_write_after_its_abort_is_committed_by_the_next_transaction(
    start_buggy: Callable[[list[str]], BrokerProcess], bug: bool
) -> None:
    broker = start_buggy(["delayed-endtxn"] if bug else [])
    client = WireClient(broker.bootstrap)
    try:
        assert create_topic(client, TOPIC).error_code == ErrorCode.none
        init = init_producer_id(client, TXN_ID)
        assert init.error_code == ErrorCode.none
        pid, epoch = init.producer_id, init.producer_epoch

        # Transaction 1 adds the partition; its write is delayed; the client aborts.
        add_partition_when_done(client, pid, epoch)
        assert end_txn(client, TXN_ID, pid, epoch, commit=False) == ErrorCode.none
        late = produce_txn(client, make_batch([b"aborted"], pid, epoch, 0, transactional=True))

        # Transaction 2 writes and commits.
        add_partition_when_done(client, pid, epoch)
        seq = 1 if late.error_code == ErrorCode.none else 0
        batch = make_batch([b"committed"], pid, epoch, seq, transactional=True)
        assert produce_txn(client, batch).error_code == ErrorCode.none
        assert end_txn(client, TXN_ID, pid, epoch, commit=True) == ErrorCode.none

        seen = committed_values(client)
        if bug:
            assert late.error_code == ErrorCode.none  # appended outside any transaction...
            assert seen == [b"aborted", b"committed"]  # ...and committed by the next one
        else:
            assert late.error_code == ErrorCode.invalid_txn_state
            assert seen == [b"committed"]
    finally:
        client.close()
