"""lso-off-by-one: a read_committed fetch returns the first record of a transaction
that is still open (and is then aborted: G1a); without the bug it returns nothing
of it. A real transactional confluent-kafka producer, a raw Fetch to see the bytes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from broker.launcher import BrokerProcess
from tests.broker.batches import read_values
from tests.broker.wire import WireClient, create_topic, fetch
from tests.eventually import eventually
from workloads.handles import Clients

pytestmark = [pytest.mark.broker, pytest.mark.integration]


@pytest.mark.parametrize("bug", [True, False], ids=["lso-off-by-one", "correct"])
def test_read_committed_fetch_of_an_open_transaction(
    start_buggy: Callable[[list[str]], BrokerProcess], kafka_clients: Clients, bug: bool
) -> None:
    broker = start_buggy(["lso-off-by-one"] if bug else [])
    client = WireClient(broker.bootstrap)
    producer = kafka_clients.producer(
        {"bootstrap.servers": broker.bootstrap, "transactional.id": "lso"}
    )
    try:
        assert create_topic(client, "lso").error_code == ErrorCode.none
        producer.init_transactions(30)
        producer.begin_transaction()
        for value in (b"open-1", b"open-2"):  # one batch each: flushed one at a time
            producer.produce("lso", value=value, partition=0)
            producer.flush(30)
        uncommitted = fetch(client, "lso")
        committed = fetch(client, "lso", read_committed=True)
        assert [v for _, v in read_values(uncommitted.records)] == [b"open-1", b"open-2"]
        if bug:
            assert committed.last_stable_offset == 1
            assert read_values(committed.records) == [(0, b"open-1")]
        else:
            assert committed.last_stable_offset == 0
            assert read_values(committed.records or b"") == []
        producer.abort_transaction(30)

        # EndTxn answers once the abort is prepared; the marker (offset 2) is
        # written after, as in Kafka, and then the LSO moves past it
        def past_the_marker() -> Any:
            answer = fetch(client, "lso", read_committed=True)
            return answer if answer.last_stable_offset >= 3 else None

        after = eventually(past_the_marker, 30, what="the abort marker never landed")
        # The record read above belongs to an aborted transaction: an aborted read.
        assert [t.first_offset for t in after.aborted_transactions] == [0]
    finally:
        client.close()
