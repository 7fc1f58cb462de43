"""Three ``jepka broker --voters`` processes form one cluster: a controller is
elected, brokers register, topics get RF 3 with leaders spread, and unmodified
confluent-kafka clients are served; the controller fails over."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

import pytest
from confluent_kafka.admin import ClusterMetadata

from broker.replication.local_cluster import LocalCluster
from tests.broker.cluster.clients import admin, create_topic, metadata, produce, read_partition
from tests.eventually import eventually
from tests.reading import poll_records
from workloads.handles import Clients

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.integration]


def test_three_nodes_serve_clients_with_spread_leaders(
    start_cluster: Callable[..., LocalCluster], kafka_clients: Clients
) -> None:
    cluster = start_cluster()
    create_topic(cluster.bootstrap, "spread", 6, 3)
    spread = metadata(cluster.bootstrap)
    assert sorted(spread.brokers) == [1, 2, 3]
    assert spread.controller_id in (1, 2, 3)
    partitions = spread.topics["spread"].partitions.values()
    assert all(sorted(p.replicas) == [1, 2, 3] for p in partitions)
    assert all(p.leader == p.replicas[0] for p in partitions)
    assert len({p.leader for p in partitions}) == 3

    values = {p: [f"{p}-{i}" for i in range(20)] for p in range(6)}
    assert (
        produce(cluster.bootstrap, "spread", values, **{"enable.idempotence": True}) == [None] * 120
    )
    for p in range(6):
        assert read_partition(cluster.bootstrap, "spread", p, 20) == values[p]

    # A consumer group: its coordinator is the leader of an internal partition,
    # wherever that is.
    consumer = kafka_clients.consumer(
        {"bootstrap.servers": cluster.bootstrap, "group.id": "g", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe(["spread"])
    seen = len(poll_records(consumer, 120, 30))
    consumer.commit(asynchronous=False)
    assert seen == 120


def test_controller_failover_while_topics_are_created(
    start_cluster: Callable[..., LocalCluster],
) -> None:
    cluster = start_cluster(settings=("broker.session.timeout.ms=3000",))
    create_topic(cluster.bootstrap, "before", 3, 3)
    old = metadata(cluster.bootstrap).controller_id
    cluster.kill(old)
    survivors = ",".join(n.address for n in cluster.nodes.values() if n.node_id != old)

    def without_old() -> ClusterMetadata | None:
        after = metadata(survivors)
        return None if after.controller_id in (old, -1) or old in after.brokers else after

    after = eventually(
        without_old, 30, interval=0.2, what=f"a controller other than {old}, and {old} gone"
    )
    assert after.controller_id not in (old, -1)
    assert sorted(after.brokers) == sorted(set(cluster.nodes) - {old})
    # The dead broker led a partition of "before": it has a new leader from the ISR.
    assert all(p.leader not in (old, -1) for p in after.topics["before"].partitions.values())

    create_topic(survivors, "after", 2, 2)
    values = {0: ["a", "b"], 1: ["c"]}
    assert produce(survivors, "after", values) == [None] * 3
    assert read_partition(survivors, "after", 0, 2) == ["a", "b"]


def test_deleted_topic_disappears_from_every_node(
    start_cluster: Callable[..., LocalCluster],
) -> None:
    cluster = start_cluster()
    create_topic(cluster.bootstrap, "doomed", 3, 3)
    assert list(cluster.root.glob("n*/doomed-*"))  # replicas on disk
    with admin(cluster.bootstrap) as client:
        client.delete_topics(["doomed"], operation_timeout=30)["doomed"].result(60)

    def forgotten(address: str) -> bool:
        return "doomed" not in metadata(address).topics

    deadline = time.monotonic() + 30  # for all the nodes together
    for node in cluster.nodes.values():
        eventually(
            partial(forgotten, node.address),
            deadline - time.monotonic(),
            interval=0.2,
            what=f"node {node.node_id} still lists the topic",
        )
    assert not list(cluster.root.glob("n*/doomed-*"))
