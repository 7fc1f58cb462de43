"""Transactions with confluent-kafka (librdkafka) and unmodified settings:
commit/abort visibility, zombie fencing and the transaction timeout."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaException

from broker.launcher import BrokerProcess
from tests.broker.coordinator.kafka_helpers import (
    create_topic,
    produce_values,
    read_all,
    transactional_producer,
    values_of,
)
from workloads.handles import Clients

pytestmark = [pytest.mark.broker, pytest.mark.integration]


def test_commit_and_abort_across_partitions(
    coord_broker: BrokerProcess, kafka_clients: Clients
) -> None:
    bs = coord_broker.bootstrap
    create_topic(bs, "tx", 3)
    producer = transactional_producer(kafka_clients, bs, "tx-commit-abort")
    batches = [("c", 9, True), ("a", 9, False), ("d", 6, True), ("e", 3, False)]
    for prefix, count, commit in batches:
        producer.begin_transaction()
        produce_values(producer, "tx", [f"{prefix}{i}" for i in range(count)], 3)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    committed = read_all(bs, "tx", 3, "read_committed")
    everything = read_all(bs, "tx", 3, "read_uncommitted")
    want_committed = {f"c{i}" for i in range(9)} | {f"d{i}" for i in range(6)}
    assert sorted(values_of(committed)) == sorted(want_committed)
    assert set(values_of(everything)) == want_committed | {f"a{i}" for i in range(9)} | {
        f"e{i}" for i in range(3)
    }
    assert len(everything) == 27
    # Per partition, committed records keep their produce order.
    for partition in range(3):
        seen = [v for p, _, v in committed if p == partition]
        assert seen == sorted(seen, key=lambda v: (v[:1], int(v[1:])))


def test_a_second_producer_fences_the_first(
    coord_broker: BrokerProcess, kafka_clients: Clients
) -> None:
    bs = coord_broker.bootstrap
    create_topic(bs, "fence", 2)
    zombie = transactional_producer(kafka_clients, bs, "tx-fence")
    zombie.begin_transaction()
    produce_values(zombie, "fence", ["z0", "z1"], 2)
    successor = transactional_producer(kafka_clients, bs, "tx-fence")  # bumps the epoch, aborts z*
    successor.begin_transaction()
    produce_values(successor, "fence", ["s0", "s1", "s2"], 2)
    successor.commit_transaction(30)
    with pytest.raises(KafkaException) as info:
        produce_values(zombie, "fence", ["z2"], 2)
        zombie.commit_transaction(30)
    assert info.value.args[0].fatal() or not info.value.args[0].retriable()
    assert sorted(values_of(read_all(bs, "fence", 2, "read_committed"))) == ["s0", "s1", "s2"]


def test_an_expired_transaction_is_aborted_by_the_coordinator(
    coord_broker: BrokerProcess, kafka_clients: Clients
) -> None:
    bs = coord_broker.bootstrap
    create_topic(bs, "expire", 1)
    slow = transactional_producer(
        kafka_clients, bs, "tx-expire", **{"transaction.timeout.ms": 1000}
    )
    slow.begin_transaction()
    produce_values(slow, "expire", ["late0", "late1"], 1)
    # The open transaction pins the last stable offset until the coordinator aborts it.
    time.sleep(2.5)
    assert read_all(bs, "expire", 1, "read_committed") == []
    with pytest.raises(KafkaException):
        slow.commit_transaction(30)
    fresh = transactional_producer(kafka_clients, bs, "tx-expire")
    fresh.begin_transaction()
    produce_values(fresh, "expire", ["ok"], 1)
    fresh.commit_transaction(30)
    assert values_of(read_all(bs, "expire", 1, "read_committed")) == ["ok"]
    assert set(values_of(read_all(bs, "expire", 1, "read_uncommitted"))) == {"late0", "late1", "ok"}
