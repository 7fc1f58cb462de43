"""SIGKILL of the broker: transaction state, producer ids and committed offsets
come back by replaying the internal topics; an open transaction is still
fenced and aborted by the next instance of its producer."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kio.schema.errors import ErrorCode

from broker.launcher import BrokerProcess
from tests.broker.coordinator import kafka_helpers
from tests.broker.coordinator import wire_calls as w
from tests.broker.coordinator.conftest import COORDINATOR_SETTINGS
from tests.broker.coordinator.kafka_helpers import (
    produce_values,
    read_all,
    transactional_producer,
    values_of,
)
from tests.broker.wire import WireClient, create_topic
from workloads.handles import Clients

pytestmark = [pytest.mark.broker, pytest.mark.integration, pytest.mark.slow]


def test_sigkill_keeps_transactions_producer_ids_and_offsets(
    start_broker: Callable[..., BrokerProcess], kafka_clients: Clients
) -> None:
    broker = start_broker(*COORDINATOR_SETTINGS)
    client = WireClient(broker.bootstrap)
    assert create_topic(client, "r", 1).error_code == ErrorCode.none
    assert w.commit_offset(client, "plain", "r", 7) == ErrorCode.none
    w.init_producer_id(client, "rtx")
    before = w.init_producer_id(client, "rtx")
    idempotent = w.init_producer_id(client, None)
    init = w.init_producer_id(client, "offsets-tx")
    pid, epoch = init.producer_id, init.producer_epoch
    assert w.add_offsets(client, "offsets-tx", pid, epoch, "txg") == ErrorCode.none
    assert w.txn_offset_commit(client, "offsets-tx", pid, epoch, "txg", "r", 11) == ErrorCode.none
    assert w.end_txn(client, "offsets-tx", pid, epoch, True) == ErrorCode.none
    assert w.wait_for_stable_offset(client, "txg", "r") == 11
    client.close()

    producer = transactional_producer(kafka_clients, broker.bootstrap, "open-tx")
    producer.begin_transaction()
    produce_values(producer, "r", ["kept"], 1)
    producer.commit_transaction(30)
    producer.begin_transaction()
    produce_values(producer, "r", ["open"], 1)  # on the broker, undecided, at the crash

    broker.kill()
    broker.start()
    client = WireClient(broker.bootstrap)
    try:
        assert w.fetch_offset(client, "plain", "r", require_stable=True) == (7, ErrorCode.none)
        assert w.fetch_offset(client, "txg", "r", require_stable=True) == (11, ErrorCode.none)
        after = w.init_producer_id(client, "rtx")
        assert (after.producer_id, after.producer_epoch) == (
            before.producer_id,
            before.producer_epoch + 1,
        )
        assert w.init_producer_id(client, None).producer_id > max(idempotent.producer_id, pid)
    finally:
        client.close()

    # fences and aborts "open"
    successor = transactional_producer(kafka_clients, broker.bootstrap, "open-tx")
    successor.begin_transaction()
    produce_values(successor, "r", ["next"], 1)
    successor.commit_transaction(30)
    assert values_of(read_all(broker.bootstrap, "r", 1, "read_committed")) == ["kept", "next"]
    assert values_of(read_all(broker.bootstrap, "r", 1, "read_uncommitted")) == [
        "kept",
        "open",
        "next",
    ]


def test_a_stable_group_carries_on_across_a_broker_crash(
    start_broker: Callable[..., BrokerProcess], kafka_clients: Clients
) -> None:
    broker = start_broker(*COORDINATOR_SETTINGS)
    bs = broker.bootstrap
    kafka_helpers.create_topic(bs, "live", 4)
    config = {
        "bootstrap.servers": bs,
        "group.id": "live",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    consumers = [kafka_clients.consumer(config) for _ in range(2)]
    for consumer in consumers:
        consumer.subscribe(["live"])
    kafka_helpers.poll_until(
        consumers, lambda: all(len(c.assignment()) == 2 for c in consumers), []
    )
    first = [f"f{i}" for i in range(20)]
    send(bs, "live", first)
    seen: list[str] = []
    kafka_helpers.poll_until(consumers, lambda: len(seen) >= 20, seen)
    for consumer in consumers:
        consumer.commit(asynchronous=False)

    broker.kill()
    broker.start()  # same port; the group comes back Stable from __consumer_offsets
    second = [f"s{i}" for i in range(20)]
    send(bs, "live", second)
    after: list[str] = []
    kafka_helpers.poll_until(consumers, lambda: len(after) >= 20, after)
    assert sorted(seen) == sorted(first)
    assert sorted(after) == sorted(second)  # nothing committed was read again


def send(bootstrap: str, topic: str, values: list[str]) -> None:
    with Clients() as clients:
        producer = clients.producer({"bootstrap.servers": bootstrap})
        for i, value in enumerate(values):
            producer.produce(topic, value=value.encode(), partition=i % 4)
        assert producer.flush(30) == 0
