"""Idempotent-producer validation on the wire, with exact sequence numbers."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from broker.launcher import BrokerProcess
from tests.broker.batches import make_batch
from tests.broker.wire import WireClient, create_topic, produce

pytestmark = [pytest.mark.broker, pytest.mark.integration]
PID = 4242


@pytest.fixture
def client(broker: BrokerProcess):
    client = WireClient(broker.bootstrap)
    assert create_topic(client, "idem").error_code == ErrorCode.none
    yield client
    client.close()


def send(client: WireClient, seq: int, n: int = 2, epoch: int = 0):
    values = [f"v{seq + i}".encode() for i in range(n)]
    return produce(client, "idem", 0, make_batch(values, PID, epoch, seq))


def test_retried_batch_returns_original_offset_without_a_new_record(client: WireClient) -> None:
    first = send(client, 0)
    second = send(client, 2)
    assert (first.error_code, first.base_offset) == (ErrorCode.none, 0)
    assert (second.error_code, second.base_offset) == (ErrorCode.none, 2)
    retry = send(client, 0)
    assert (retry.error_code, retry.base_offset) == (ErrorCode.none, 0)
    after = send(client, 4)
    assert after.base_offset == 4  # the retry appended nothing


def test_sequence_gap_is_out_of_order(client: WireClient) -> None:
    assert send(client, 0).error_code == ErrorCode.none
    assert send(client, 5).error_code == ErrorCode.out_of_order_sequence_number


def test_dedup_window_is_five_batches(client: WireClient) -> None:
    for seq in range(0, 12, 2):
        assert send(client, seq).error_code == ErrorCode.none
    # batch seq 0 fell out of the window of five: neither a duplicate nor in sequence
    assert send(client, 0).error_code == ErrorCode.out_of_order_sequence_number
    assert send(client, 2).base_offset == 2


def test_older_epoch_is_fenced_and_new_epoch_starts_at_zero(client: WireClient) -> None:
    assert send(client, 0, epoch=1).error_code == ErrorCode.none
    assert send(client, 2, epoch=0).error_code == ErrorCode.invalid_producer_epoch
    assert send(client, 7, epoch=2).error_code == ErrorCode.out_of_order_sequence_number
    assert send(client, 0, epoch=2).error_code == ErrorCode.none
