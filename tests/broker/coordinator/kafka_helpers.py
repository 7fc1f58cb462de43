"""Real-client helpers for coordinator tests: topics, transactional producers and
draining a topic to its end as a read_committed or read_uncommitted reader."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from tests.eventually import eventually
from workloads.handles import Clients

Record = tuple[int, int, bytes]  # partition, offset, value


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    with Clients() as clients:
        admin = clients.admin({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
            future.result(30)


def transactional_producer(
    clients: Clients, bootstrap: str, transactional_id: str, **extra: object
) -> Producer:
    """An initialised transactional producer, closed with ``clients``."""
    producer = clients.producer(
        {"bootstrap.servers": bootstrap, "transactional.id": transactional_id, **extra}
    )
    producer.init_transactions(30)
    return producer


def produce_values(producer: Producer, topic: str, values: list[str], partitions: int) -> None:
    for i, value in enumerate(values):
        producer.produce(topic, value=value.encode(), partition=i % partitions)
    producer.flush(30)


def read_all(
    bootstrap: str, topic: str, partitions: int, isolation: str, timeout: float = 30
) -> list[Record]:
    """Every record below the end offset the reader's isolation level allows
    (the high watermark, or the last stable offset for read_committed)."""
    with Clients() as clients:
        consumer = clients.consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"reader-{uuid.uuid4()}",
                "enable.auto.commit": False,
                "isolation.level": isolation,
            }
        )
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        ends = {tp.partition: consumer.get_watermark_offsets(tp, 30)[1] for tp in tps}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        out: list[Record] = []

        def at_the_ends() -> bool:
            positions = {tp.partition: tp.offset for tp in consumer.position(tps)}
            if all(positions[p] >= ends[p] for p in ends):
                return True
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                out.append((message.partition(), message.offset(), message.value()))
            return False

        eventually(
            at_the_ends, timeout, interval=0, what=lambda: f"reach {ends}; read {len(out)} records"
        )
        return out


def values_of(records: list[Record]) -> list[str]:
    return [value.decode() for _, _, value in records]


def poll_until(
    consumers: list[Consumer], done: Callable[[], bool], seen: list[str], timeout: float = 60
) -> None:
    """Polls every consumer in turn (librdkafka rebalances inside poll) until ``done``."""

    def polled_until_done() -> bool:
        for consumer in consumers:
            message = consumer.poll(0.05)
            if message is not None and message.error() is None:
                seen.append(message.value().decode())
        return done()

    eventually(polled_until_done, timeout, interval=0, what=lambda: f"consumed {len(seen)}")
