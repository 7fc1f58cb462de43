"""Topic configs changed by admin clients, as Kafka takes them: librdkafka's
IncrementalAlterConfigs (set, delete, append to a list) and kafka-python's
AlterConfigs (the whole set, which kafka-python fills in with the topic's
other overrides), on one node and through the active controller of a 3-node
cluster. Every broker comes to describe the new values, a value the topic
cannot take is INVALID_CONFIG and broker configs are refused."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource as KafkaConfigResource
from kafka.admin import ConfigResourceType

from broker.replication.local_cluster import LocalCluster
from tests.broker.cluster.clients import admin, create_topic, leaders, produce
from tests.broker.wire import WireClient
from tests.eventually import eventually

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.integration]
TOPIC = "tuned"


def alter(bootstrap: str, *entries: tuple[str, str | None, AlterConfigOpType]) -> None:
    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        TOPIC,
        incremental_configs=[ConfigEntry(k, v, incremental_operation=op) for k, v, op in entries],
    )
    with admin(bootstrap) as client:
        client.incremental_alter_configs([resource])[resource].result(30)


def overrides(address: str) -> dict[str, str]:
    """The topic's own settings, as the broker at ``address`` itself describes
    them (an admin client would ask any broker)."""
    client = WireClient(address)
    try:
        response = client.request(
            32, 4, {"resources": [{"resource_type": 2, "resource_name": TOPIC,
                                   "configuration_keys": None}],
                    "include_synonyms": False, "include_documentation": False},
        )  # fmt: skip
    finally:
        client.close()
    (result,) = response.results
    return {c.name: c.value for c in result.configs if c.config_source == 1}  # the topic's


def everywhere(cluster: LocalCluster, wanted: dict[str, str]) -> None:
    """Every broker describes ``wanted``: all of them hold the change, so a
    client reading the current set from any broker gets it."""
    for node in cluster.nodes.values():
        eventually(
            lambda n=node: overrides(n.address) == wanted,
            10,
            what=lambda n=node: f"{wanted} on {n.address}, not {overrides(n.address)}",
        )


@pytest.mark.parametrize("size", [1, 3], ids=["single", "cluster"])
def test_topic_configs_change_on_every_broker(
    start_cluster: Callable[..., LocalCluster], size: int
) -> None:
    cluster = start_cluster(size)
    bootstrap = cluster.bootstrap
    create_topic(bootstrap, TOPIC, 1, size, **{"retention.ms": "60000"})
    alter(
        bootstrap,
        ("min.insync.replicas", str(size), AlterConfigOpType.SET),
        ("retention.ms", None, AlterConfigOpType.DELETE),
        ("cleanup.policy", "compact", AlterConfigOpType.APPEND),
    )
    everywhere(cluster, {"min.insync.replicas": str(size), "cleanup.policy": "delete,compact"})
    with pytest.raises(KafkaException, match="INVALID_CONFIG"):
        alter(bootstrap, ("min.insync.replicas", str(size + 1), AlterConfigOpType.SET))
    kafka_admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        topic = KafkaConfigResource(ConfigResourceType.TOPIC, TOPIC, {"segment.bytes": "1048576"})
        assert kafka_admin.alter_configs([topic], incremental=False) == {"topic": {TOPIC: "OK"}}
        broker = KafkaConfigResource(ConfigResourceType.BROKER, "1", {"num.partitions": "3"})
        answer = kafka_admin.alter_configs([broker], raise_on_unknown=False, incremental=False)
        assert "InvalidRequest" in answer["broker"]["1"]  # broker configs are static here
    finally:
        kafka_admin.close()
    everywhere(
        cluster,
        {"min.insync.replicas": str(size), "cleanup.policy": "delete,compact",
         "segment.bytes": "1048576"},
    )  # fmt: skip
    leaders(bootstrap, TOPIC)
    assert produce(bootstrap, TOPIC, {0: ["kept"]}) == [None]
