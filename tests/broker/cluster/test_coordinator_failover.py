"""Coordinators move with the leadership of their internal partitions: after the
group coordinator's node is SIGKILLed, the new leader of its ``__consumer_offsets``
partition reloads the group from the replicated log, so committed offsets survive
and the group carries on from them."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

from broker.replication.local_cluster import LocalCluster
from tests.broker.cluster.clients import admin, create_topic, produce
from tests.eventually import eventually
from tests.reading import poll_records
from workloads.handles import Clients

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.integration]


def consume(bootstrap: str, count: int, timeout: float = 60) -> list[str]:
    with Clients() as clients:
        consumer = clients.consumer(
            {"bootstrap.servers": bootstrap, "group.id": "cg", "auto.offset.reset": "earliest",
             "enable.auto.commit": False}
        )  # fmt: skip
        consumer.subscribe(["work"])
        values = [m.value().decode() for m in poll_records(consumer, count, timeout)]
        if values:
            consumer.commit(asynchronous=False)
    return values


def coordinator_of(bootstrap: str) -> int:
    with admin(bootstrap) as client:
        futures = client.describe_consumer_groups(["cg"], request_timeout=10)
        return futures["cg"].result(30).coordinator.id


def test_committed_offsets_survive_the_coordinator_sigkill(
    start_cluster: Callable[..., LocalCluster],
) -> None:
    cluster = start_cluster(settings=("broker.session.timeout.ms=2000",))
    create_topic(cluster.bootstrap, "work", 3, 3, **{"min.insync.replicas": "2"})
    first = {p: [f"a{p}-{i}" for i in range(10)] for p in range(3)}
    assert produce(cluster.bootstrap, "work", first) == [None] * 30
    assert sorted(consume(cluster.bootstrap, 30)) == sorted(v for vs in first.values() for v in vs)

    coordinator = coordinator_of(cluster.bootstrap)
    cluster.kill(coordinator)
    survivors = ",".join(n.address for n in cluster.nodes.values() if n.node_id != coordinator)
    eventually(
        lambda: coordinator_of(survivors) != coordinator,
        60,
        interval=0.3,
        what="no new coordinator",
        retry_on=(Exception,),  # the group is briefly without a coordinator
    )
    request = ConsumerGroupTopicPartitions("cg", [TopicPartition("work", p) for p in range(3)])
    with admin(survivors) as client:
        offsets = client.list_consumer_group_offsets([request])["cg"].result(30)
    assert sorted(tp.offset for tp in offsets.topic_partitions) == [10, 10, 10]

    second = {p: [f"b{p}"] for p in range(3)}
    assert produce(survivors, "work", second) == [None] * 3
    assert sorted(consume(survivors, 3)) == ["b0", "b1", "b2"]
