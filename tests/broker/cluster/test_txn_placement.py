"""A transaction coordinator need not host its transactions' partitions: with
one replica per partition on a 3-node cluster, each partition lives on one
node, so a transaction writing to all of them names partitions its
coordinator knows only from the cluster's metadata (Kafka's metadata cache).
AddPartitionsToTxn accepts them, and the commit reaches every partition."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka import TopicPartition

from broker.replication.local_cluster import LocalCluster
from tests.broker.cluster.clients import create_topic, leaders
from tests.reading import poll_records
from workloads.handles import Clients

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.integration]

TOPIC = "placed"
PARTITIONS = 3


def test_a_transaction_commits_on_partitions_its_coordinator_does_not_host(
    start_cluster: Callable[..., LocalCluster],
) -> None:
    cluster = start_cluster(3)
    bootstrap = cluster.bootstrap
    create_topic(bootstrap, TOPIC, PARTITIONS, 1)
    assert len(set(leaders(bootstrap, TOPIC, PARTITIONS))) == PARTITIONS  # one per node
    with Clients() as clients:
        producer = clients.producer(
            {"bootstrap.servers": bootstrap, "transactional.id": "placed-1", "acks": "all",
             "message.timeout.ms": 10000, "transaction.timeout.ms": 20000}
        )  # fmt: skip
        producer.init_transactions(30)
        producer.begin_transaction()
        for partition in range(PARTITIONS):
            producer.produce(TOPIC, value=f"v{partition}".encode(), partition=partition)
        producer.commit_transaction(20)
        consumer = clients.consumer(
            {"bootstrap.servers": bootstrap, "group.id": "placed-reader",
             "isolation.level": "read_committed", "enable.auto.commit": False}
        )  # fmt: skip
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        values = sorted(m.value().decode() for m in poll_records(consumer, PARTITIONS, 30))
    assert values == [f"v{p}" for p in range(PARTITIONS)]
