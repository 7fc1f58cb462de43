"""Clients and close_producer end librdkafka handles at once, even with the broker gone."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import NewTopic

from tests.client_threads import Snapshot, left_after
from workloads.handles import ABORT_S, Clients, close_producer

pytestmark = [pytest.mark.integration, pytest.mark.broker]


def create_topic(bootstrap: str) -> None:
    with Clients() as clients:
        clients.admin({"bootstrap.servers": bootstrap}).create_topics([NewTopic("t", 1, 1)])[
            "t"
        ].result(10)


def test_every_client_of_a_block_is_gone_with_its_broker_gone(broker: Any) -> None:
    before = Snapshot.take()
    create_topic(broker.bootstrap)
    conf = {"bootstrap.servers": broker.bootstrap}
    with Clients() as clients:
        clients.producer(conf).produce("t", b"never acknowledged")
        clients.consumer({**conf, "group.id": "g"}).subscribe(["t"])
        clients.admin(conf)
        broker.kill()
        started = time.monotonic()
    assert time.monotonic() - started < 1  # not message.timeout.ms (300 s)
    assert before.new_client_threads() == []


def test_an_open_transaction_out_of_reach_does_not_hang_the_close(broker: Any) -> None:
    before = Snapshot.take()
    create_topic(broker.bootstrap)
    clients = Clients()
    producer = clients.producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "x"})
    producer.init_transactions(10)
    producer.begin_transaction()
    producer.produce("t", b"open")
    producer.flush(10)
    broker.kill()
    started = time.monotonic()
    clients.close()  # Producer.close() would abort with no time limit
    assert time.monotonic() - started < ABORT_S + 1
    del producer  # the last reference: destroyed without close
    assert before.new_client_threads() == []


def test_a_fenced_producer_closes_without_raising(broker: Any) -> None:
    before = Snapshot.take()
    create_topic(broker.bootstrap)
    conf = {"bootstrap.servers": broker.bootstrap, "transactional.id": "fenced"}
    with Clients() as clients:
        zombie = clients.producer(conf)
        zombie.init_transactions(10)
        zombie.begin_transaction()
        zombie.produce("t", b"zombie")
        clients.producer(conf).init_transactions(10)  # bumps the epoch
        with pytest.raises(KafkaException):
            zombie.commit_transaction(10)
        close_producer(zombie)  # its fatal error is not raised again
    assert before.new_client_threads() == []


def _fail_holding(producer: Producer) -> None:
    raise RuntimeError("a test body that failed with a producer in its frame")


def test_a_producer_closed_while_an_exception_is_handled_is_freed(broker: Any) -> None:
    before = Snapshot.take()
    create_topic(broker.bootstrap)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "y"})
    producer.init_transactions(10)
    producer.begin_transaction()
    producer.produce("t", b"open")
    producer.flush(10)
    broker.kill()
    try:
        _fail_holding(producer)
    except RuntimeError:
        close_producer(producer)  # its abort times out, raising inside
    del producer
    assert left_after(before, 2.0) == []
