"""confluent-kafka helpers shared by the cluster tests."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, ClusterMetadata, NewTopic

from tests.eventually import eventually
from tests.reading import poll_records
from workloads.handles import Clients


@contextmanager
def admin(bootstrap: str) -> Iterator[AdminClient]:
    """An admin client, destroyed when the block ends."""
    with Clients() as clients:
        yield clients.admin({"bootstrap.servers": bootstrap})


def metadata(bootstrap: str, topic: str | None = None) -> ClusterMetadata:
    """A Metadata response: every topic's, or ``topic``'s only."""
    with admin(bootstrap) as client:
        return client.list_topics(topic, timeout=10)


def create_topic(bootstrap: str, name: str, partitions: int, rf: int, **configs: str) -> None:
    """Creates the topic and waits until every broker in ``bootstrap`` names a leader
    for each partition: CreateTopics answers once the controller committed it, and
    each broker applies that metadata a moment later, as in Kafka."""
    topic = NewTopic(name, partitions, rf, config=dict(configs))
    with admin(bootstrap) as client:
        client.create_topics([topic], operation_timeout=30)[name].result(60)
    for address in bootstrap.split(","):
        leaders(address, name, partitions)


def leaders(bootstrap: str, topic: str, partitions: int = 1, timeout: float = 30) -> list[int]:
    """The leader of each partition of ``topic`` once the metadata names one for all."""
    with admin(bootstrap) as client:

        def elected() -> list[int] | None:
            meta = client.list_topics(topic, timeout=10).topics.get(topic)
            ready = meta is not None and not meta.error and len(meta.partitions) == partitions
            if ready and all(p.leader >= 0 for p in meta.partitions.values()):
                return [meta.partitions[p].leader for p in range(partitions)]
            return None

        return eventually(
            elected, timeout, interval=0.1, what=f"no leaders for {topic} in {bootstrap}'s metadata"
        )


def leader_of(bootstrap: str, topic: str) -> int:
    """The leader of ``topic``-0."""
    return leaders(bootstrap, topic)[0]


def produce(bootstrap: str, topic: str, values: dict[int, list[str]], **conf: Any) -> list[Any]:
    """Sends ``values`` per partition; returns the delivery errors (None when acked)."""
    outcomes: list[Any] = []
    with Clients() as clients:
        producer = clients.producer({"bootstrap.servers": bootstrap, "acks": "all", **conf})
        for partition, items in values.items():
            for value in items:
                producer.produce(
                    topic,
                    value=value,
                    partition=partition,
                    on_delivery=lambda e, _m: outcomes.append(e),
                )
        assert producer.flush(60) == 0
    return outcomes


def read_partition(
    bootstrap: str, topic: str, partition: int, expect: int, timeout: float = 30, **conf: Any
) -> list[str]:
    """The values from offset 0 on; ``conf`` adds consumer settings."""
    with Clients() as clients:
        consumer = clients.consumer(
            {"bootstrap.servers": bootstrap, "group.id": f"reader-{time.monotonic_ns()}",
             "enable.auto.commit": False, **conf}
        )  # fmt: skip
        consumer.assign([TopicPartition(topic, partition, 0)])
        return [m.value().decode() for m in poll_records(consumer, expect, timeout)]


def partition_state(bootstrap: str, topic: str) -> tuple[int, list[int]]:
    """Partition 0's (leader, sorted ISR), from a Metadata request."""
    partition = metadata(bootstrap, topic).topics[topic].partitions[0]
    return partition.leader, sorted(partition.isrs)


def wait_state(
    bootstrap: str, topic: str, check: Callable[[int, list[int]], bool], timeout: float = 60
) -> tuple[int, list[int]]:
    """Polls partition 0's state until ``check(leader, isr)``; returns that state."""

    def reached() -> tuple[int, list[int]] | None:
        state = partition_state(bootstrap, topic)
        return state if check(*state) else None

    return eventually(
        reached,
        timeout,
        interval=0.1,
        what=lambda: f"{topic}-0 as checked; it is {partition_state(bootstrap, topic)}",
    )
