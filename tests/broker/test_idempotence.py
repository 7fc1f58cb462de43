"""Idempotent-producer validation on the wire, with exact sequence numbers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from broker.launcher import BrokerProcess
from tests.broker.batches import make_batch
from tests.broker.wire import WireClient, create_topic, produce

pytestmark = [pytest.mark.broker, pytest.mark.integration]
PID = 4242


class Producer:
    """One idempotent producer id writing to the test's own topic."""

    def __init__(self, client: WireClient, topic: str) -> None:
        self.client, self.topic = client, topic

    def send(self, seq: int, n: int = 2, epoch: int = 0) -> Any:
        values = [f"v{seq + i}".encode() for i in range(n)]
        return produce(self.client, self.topic, 0, make_batch(values, PID, epoch, seq))


@pytest.fixture
def producer(shared_broker: BrokerProcess, topic: str) -> Iterator[Producer]:
    client = WireClient(shared_broker.bootstrap)
    assert create_topic(client, topic).error_code == ErrorCode.none
    yield Producer(client, topic)
    client.close()


def test_retried_batch_returns_original_offset_without_a_new_record(producer: Producer) -> None:
    first = producer.send(0)
    second = producer.send(2)
    assert (first.error_code, first.base_offset) == (ErrorCode.none, 0)
    assert (second.error_code, second.base_offset) == (ErrorCode.none, 2)
    retry = producer.send(0)
    assert (retry.error_code, retry.base_offset) == (ErrorCode.none, 0)
    after = producer.send(4)
    assert after.base_offset == 4  # the retry appended nothing


def test_sequence_gap_is_out_of_order(producer: Producer) -> None:
    assert producer.send(0).error_code == ErrorCode.none
    assert producer.send(5).error_code == ErrorCode.out_of_order_sequence_number


def test_dedup_window_is_five_batches(producer: Producer) -> None:
    for seq in range(0, 12, 2):
        assert producer.send(seq).error_code == ErrorCode.none
    # batch seq 0 fell out of the window of five: neither a duplicate nor in sequence
    assert producer.send(0).error_code == ErrorCode.out_of_order_sequence_number
    assert producer.send(2).base_offset == 2


def test_older_epoch_is_fenced_and_new_epoch_starts_at_zero(producer: Producer) -> None:
    assert producer.send(0, epoch=1).error_code == ErrorCode.none
    assert producer.send(2, epoch=0).error_code == ErrorCode.invalid_producer_epoch
    assert producer.send(7, epoch=2).error_code == ErrorCode.out_of_order_sequence_number
    assert producer.send(0, epoch=2).error_code == ErrorCode.none
