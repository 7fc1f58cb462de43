"""DeleteRecords on a 3-node cluster through two independent admin clients
(librdkafka's and kafka-python's): the leader raises the log start offset and
answers with the low watermark once the whole ISR has it; every follower adopts
it, so after a leader change reads below it are still out of range (a consumer
resets to it) and ListOffsets EARLIEST answers it, and restarts keep it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka import KafkaException, TopicPartition
from kafka import KafkaAdminClient
from kafka import TopicPartition as KafkaTopicPartition

from broker.log.start_checkpoint import CHECKPOINT_NAME
from broker.replication.local_cluster import LocalCluster
from tests.broker.cluster.clients import (
    admin,
    create_topic,
    leader_of,
    leaders,
    produce,
    read_partition,
    wait_state,
)
from tests.eventually import eventually
from workloads.handles import Clients

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.integration]
TOPIC = "trimmed"
VALUES = [f"v{i}" for i in range(20)]


def watermarks(bootstrap: str) -> tuple[int, int]:
    """(earliest, latest) offsets of ``TOPIC``-0 from ListOffsets on its leader, asked
    by a new consumer each time: a new leader may not know its latest offset yet,
    and a consumer that saw no leader keeps that metadata for a while."""

    def ask() -> tuple[int, int]:
        with Clients() as clients:
            consumer = clients.consumer({"bootstrap.servers": bootstrap, "group.id": "marks"})
            return consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=5)

    return eventually(ask, 30, interval=0.2, retry_on=(KafkaException,), what="watermarks")


def confluent_delete(bootstrap: str, offset: int) -> int:
    """librdkafka's DeleteRecords; the low watermark it answers."""
    with admin(bootstrap) as client:
        (future,) = client.delete_records(
            [TopicPartition(TOPIC, 0, offset)], operation_timeout=30
        ).values()
        return future.result(60).low_watermark


def test_deleted_records_stay_deleted_through_failover_and_restarts(
    start_cluster: Callable[..., LocalCluster],
) -> None:
    cluster = start_cluster(settings=("log.flush.start.offset.checkpoint.interval.ms=200",))
    bootstrap = cluster.bootstrap
    create_topic(bootstrap, TOPIC, 1, 3, **{"min.insync.replicas": "2"})
    assert produce(bootstrap, TOPIC, {0: VALUES}) == [None] * len(VALUES)

    assert confluent_delete(bootstrap, 5) == 5
    with pytest.raises(KafkaException, match="OFFSET_OUT_OF_RANGE"):
        confluent_delete(bootstrap, len(VALUES) + 1)
    kafka_admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        answer = kafka_admin.delete_records({KafkaTopicPartition(TOPIC, 0): 8}, timeout_ms=30_000)
    finally:
        kafka_admin.close()
    ((_, result),) = answer.items()
    assert (result["error_code"], result["low_watermark"]) == (0, 8)
    assert watermarks(bootstrap) == (8, len(VALUES))

    for node in cluster.nodes.values():  # every replica adopted it and checkpointed it
        checkpoint = node.data_dir / CHECKPOINT_NAME
        eventually(
            lambda c=checkpoint: c.exists() and f"{TOPIC} 0 8" in c.read_text(),
            30,
            interval=0.2,
            what=f"node {node.node_id} checkpoints log start 8",
        )

    leader = leader_of(bootstrap, TOPIC)
    cluster.kill(leader)
    live = ",".join(n.address for i, n in cluster.nodes.items() if i != leader)
    wait_state(live, TOPIC, lambda new, _isr: new not in (-1, leader))
    assert watermarks(live) == (8, len(VALUES))
    # offset 0 is out of range on the new leader: the consumer resets to the log start
    assert read_partition(live, TOPIC, 0, 12, **{"auto.offset.reset": "earliest"}) == VALUES[8:]
    cluster.restart(leader)  # after a crash: the periodic checkpoint

    for node in cluster.nodes.values():  # then every node after a clean shutdown
        assert node.stop() == 0
    for node_id in cluster.nodes:
        cluster.launch(node_id)
    cluster.wait_ready(list(cluster.nodes), 60)
    leaders(bootstrap, TOPIC)
    assert watermarks(bootstrap) == (8, len(VALUES))
    assert (
        read_partition(bootstrap, TOPIC, 0, 12, **{"auto.offset.reset": "earliest"}) == (VALUES[8:])
    )
