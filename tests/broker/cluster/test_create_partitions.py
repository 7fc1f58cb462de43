"""CreatePartitions through two independent admin clients (librdkafka's and
kafka-python's), on a single broker and on a 3-node cluster where the active
controller places the new partitions: the topic grows, records written to a
new partition are read back, and shrinking or keeping the count is refused
with INVALID_PARTITIONS."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import NewPartitions
from kafka import KafkaAdminClient
from kafka.admin import NewPartitions as KafkaNewPartitions
from kafka.errors import InvalidPartitionsError

from broker.replication.local_cluster import LocalCluster
from tests.broker.cluster.clients import (
    admin,
    create_topic,
    leaders,
    metadata,
    produce,
    read_partition,
)
from tests.eventually import eventually

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.integration]
TOPIC = "growing"


def grow_with_librdkafka(bootstrap: str, count: int) -> None:
    with admin(bootstrap) as client:
        client.create_partitions([NewPartitions(TOPIC, count)])[TOPIC].result(30)


@pytest.mark.parametrize("size", [1, 3], ids=["single", "cluster"])
def test_a_topic_grows_and_its_new_partitions_serve(
    start_cluster: Callable[..., LocalCluster], size: int
) -> None:
    cluster = start_cluster(size)
    bootstrap = cluster.bootstrap
    create_topic(bootstrap, TOPIC, 1, size)
    grow_with_librdkafka(bootstrap, 2)
    kafka_admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        kafka_admin.create_partitions({TOPIC: KafkaNewPartitions(total_count=4)})
        with pytest.raises(InvalidPartitionsError):
            kafka_admin.create_partitions({TOPIC: KafkaNewPartitions(total_count=3)})
    finally:
        kafka_admin.close()
    # kafka-python asked the controller's node; the others learn from the metadata log
    eventually(
        lambda: len(metadata(bootstrap, TOPIC).topics[TOPIC].partitions) == 4,
        10,
        what="4 partitions in every broker's metadata",
    )
    assert len(leaders(bootstrap, TOPIC, 4)) == 4  # every new partition has a leader
    assert produce(bootstrap, TOPIC, {3: ["late"]}) == [None]
    assert read_partition(bootstrap, TOPIC, 3, 1) == ["late"]
    with pytest.raises(KafkaException, match="INVALID_PARTITIONS"):
        grow_with_librdkafka(bootstrap, 4)
