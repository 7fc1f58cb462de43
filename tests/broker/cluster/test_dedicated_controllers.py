"""A separate controller quorum, as production KRaft runs: three controller-only
nodes are the voters, three broker-only nodes follow the metadata log as
observers, register, host every partition and forward what is the controller's.
Clients see only the brokers; losing the active controller or a broker leaves
acks=all writes working once the quorum or the partition has a new leader."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka import KafkaError, KafkaException

from broker.replication.local_cluster import LocalCluster
from nemesis.roles import quorum_leader
from tests.broker.cluster.clients import (
    create_topic,
    metadata,
    produce,
    read_partition,
    wait_state,
)
from tests.eventually import eventually

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.integration]

RF3 = (
    "default.replication.factor=3",
    "offsets.topic.replication.factor=3",
    "transaction.state.log.replication.factor=3",
    "broker.session.timeout.ms=2000",
)


def active_controller(cluster: LocalCluster, exclude: int | None = None) -> int:
    """The quorum's leader as a broker learns it from the active controller,
    once it is another node than ``exclude``."""

    def elected() -> int | None:
        for broker in cluster.broker_ids:
            node = cluster.nodes[broker]
            if node.alive():
                try:
                    leader = quorum_leader("127.0.0.1", node.port)
                except (OSError, ValueError, RuntimeError):
                    continue
                return leader if leader != exclude else None
        return None

    return eventually(elected, 30, interval=0.2, what="no new active controller")


def created(bootstrap: str, topic: str, rf: int) -> bool | None:
    """Creates ``topic`` with one partition; None while the controller has
    fewer than ``rf`` unfenced brokers to place it on."""
    try:
        create_topic(bootstrap, topic, 1, rf)
    except KafkaException as e:
        if e.args[0].code() != KafkaError.INVALID_REPLICATION_FACTOR:
            raise
        return None
    return True


def test_dedicated_controllers_and_brokers(start_cluster: Callable[..., LocalCluster]) -> None:
    cluster = start_cluster(size=3, controllers=3, settings=RF3)
    brokers, controllers = cluster.broker_ids, cluster.controller_ids
    assert (brokers, controllers) == ([1, 2, 3], [4, 5, 6])
    md = metadata(cluster.bootstrap)
    assert sorted(md.brokers) == brokers  # controllers are not brokers
    assert md.controller_id in brokers  # a client is never sent to a controller

    create_topic(cluster.bootstrap, "events", 3, 3, **{"min.insync.replicas": "2"})
    assert produce(cluster.bootstrap, "events", {p: [f"a{p}"] for p in range(3)}) == [None] * 3

    old = active_controller(cluster)
    assert old in controllers
    cluster.kill(old)
    new = active_controller(cluster, exclude=old)
    assert new in controllers
    assert produce(cluster.bootstrap, "events", {p: [f"b{p}"] for p in range(3)}) == [None] * 3
    # the new controller gives every broker a fresh session; one that takes
    # longer than that (2 s here) to find it, or misses it on a busy machine,
    # is fenced until its next heartbeat, and a topic of 3 replicas is
    # refused meanwhile
    eventually(
        lambda: created(cluster.bootstrap, "after-failover", 3),  # forwarded to the controller
        30,
        interval=0.2,
        what="a broker stayed fenced after the controller failover",
    )

    partition = metadata(cluster.bootstrap).topics["events"].partitions[0]
    victim = partition.leader
    cluster.kill(victim)
    live = ",".join(cluster.nodes[n].address for n in brokers if n != victim)
    wait_state(live, "events", lambda leader, isr: leader not in (victim, -1))
    assert produce(live, "events", {0: ["c0"]}) == [None]
    assert read_partition(live, "events", 0, 3) == ["a0", "b0", "c0"]
