"""Data replication under failures: a SIGKILLed leader loses no acknowledged
record, and acks=all is refused while the ISR is below min.insync.replicas."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from confluent_kafka import KafkaError

from broker.replication.local_cluster import LocalCluster
from tests.broker.cluster.clients import (
    create_topic,
    leader_of,
    produce,
    read_partition,
)
from tests.broker.wire import WireClient
from tests.eventually import eventually
from workloads.handles import Clients

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.integration]
FAST_FENCING = ("broker.session.timeout.ms=2000",)


def test_leader_sigkill_under_acks_all_load_loses_no_acknowledged_record(
    start_cluster: Callable[..., LocalCluster],
) -> None:
    cluster = start_cluster(settings=FAST_FENCING)
    create_topic(cluster.bootstrap, "load", 1, 3, **{"min.insync.replicas": "2"})
    leader = leader_of(cluster.bootstrap, "load")
    acked: list[str] = []
    stop = threading.Event()

    def load() -> None:
        with Clients() as clients:
            producer = clients.producer(
                {"bootstrap.servers": cluster.bootstrap, "acks": "all",
                 "enable.idempotence": True, "linger.ms": 5, "message.timeout.ms": 30000}
            )  # fmt: skip
            i = 0
            while not stop.is_set():
                producer.produce(
                    "load",
                    value=str(i),
                    on_delivery=lambda e, m: (
                        acked.append(m.value().decode()) if e is None else None
                    ),
                )
                producer.poll(0.002)
                i += 1
            producer.flush(60)

    worker = threading.Thread(target=load)
    worker.start()
    try:
        eventually(lambda: len(acked) >= 500, 60, what="500 acks=all writes before the kill")
        cluster.kill(leader)
        killed_at = len(acked)
        eventually(
            lambda: len(acked) >= killed_at + 500,
            30,
            what="a new leader accepting acks=all writes",
        )
    finally:
        stop.set()
        worker.join(90)
    survivors = ",".join(n.address for n in cluster.nodes.values() if n.node_id != leader)
    assert leader_of(survivors, "load") not in (leader, -1)
    values = read_partition(survivors, "load", 0, len(acked), timeout=60)
    assert set(acked) <= set(values), f"lost {len(set(acked) - set(values))} acked records"
    assert len(values) == len(set(values)), "duplicates despite idempotence"


def isr_known_to(address: str, topic: str) -> list[int]:
    """Partition 0's ISR as the broker at ``address`` has it: a Metadata request
    sent to that broker itself (librdkafka's may reach any broker, and each
    applies the controller's ISR change a moment apart)."""
    client = WireClient(address)
    try:
        response = client.request(3, 1, {"topics": [{"name": topic}]})
    finally:
        client.close()
    return sorted(response.topics[0].partitions[0].isr_nodes)


def wait_isr(address: str, topic: str, size: int, timeout: float = 60) -> list[int]:
    """Partition 0's ISR as the broker at ``address`` has it, once of ``size``
    (or as it is at the timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        isr = isr_known_to(address, topic)
        if len(isr) == size or time.monotonic() > deadline:
            return isr
        time.sleep(0.2)


def test_acks_all_refused_below_min_insync_replicas(
    start_cluster: Callable[..., LocalCluster],
) -> None:
    cluster = start_cluster(settings=FAST_FENCING)
    create_topic(cluster.bootstrap, "strict", 1, 3, **{"min.insync.replicas": "3"})
    assert produce(cluster.bootstrap, "strict", {0: ["before"]}) == [None]
    leader = leader_of(cluster.bootstrap, "strict")
    follower = next(n for n in cluster.nodes if n != leader)
    assert isr_known_to(cluster.nodes[leader].address, "strict") == [1, 2, 3]
    cluster.kill(follower)
    # The leader itself must know the shrunken ISR: one still counting the dead
    # follower appends, and refuses only after (NOT_ENOUGH_REPLICAS_AFTER_APPEND).
    isr = wait_isr(cluster.nodes[leader].address, "strict", 2, timeout=30)
    assert len(isr) == 2, "the leader never dropped the killed follower"
    errors = produce(cluster.nodes[leader].address, "strict", {0: ["refused"]}, retries=0)
    assert [e.code() for e in errors] == [KafkaError.NOT_ENOUGH_REPLICAS]
    assert produce(cluster.nodes[leader].address, "strict", {0: ["one"]}, acks=1) == [None]


def test_restarted_follower_catches_up_and_rejoins_the_isr(
    start_cluster: Callable[..., LocalCluster],
) -> None:
    cluster = start_cluster(settings=FAST_FENCING)
    create_topic(cluster.bootstrap, "rejoin", 1, 3, **{"min.insync.replicas": "2"})
    first = [f"a{i}" for i in range(100)]
    assert produce(cluster.bootstrap, "rejoin", {0: first}) == [None] * 100
    leader = leader_of(cluster.bootstrap, "rejoin")
    follower = next(n for n in cluster.nodes if n != leader)
    cluster.kill(follower)
    assert wait_isr(cluster.nodes[leader].address, "rejoin", 2) == sorted(
        set(cluster.nodes) - {follower}
    )
    second = [f"b{i}" for i in range(100)]
    assert produce(cluster.nodes[leader].address, "rejoin", {0: second}) == [None] * 100

    cluster.restart(follower)
    assert wait_isr(cluster.nodes[leader].address, "rejoin", 3) == [1, 2, 3]
    # The rejoined follower holds everything: lose the leader and read it all back.
    cluster.kill(leader)
    survivors = ",".join(n.address for n in cluster.nodes.values() if n.node_id != leader)
    assert read_partition(survivors, "rejoin", 0, 200, timeout=60) == first + second
