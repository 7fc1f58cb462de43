"""The transaction coordinator moves with the leadership of its ``__transaction_state``
partition: producers commit transactions spanning partitions led by every node while
the coordinator's node is SIGKILLed. Afterwards, read_committed readers see every
transaction whole or not at all (never committed in some partitions and aborted in
others), every commit a client was told of is there, nothing a client aborted is, and
every producer goes on committing through the new coordinator."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from confluent_kafka import KafkaException, Producer, TopicPartition

from broker.coordinator.partitioning import partition_for
from broker.replication.local_cluster import LocalCluster
from tests.broker.cluster.clients import create_topic, leaders
from tests.eventually import eventually
from workloads.handles import Clients, close_producer

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.integration]

TOPIC = "txns"
PARTITIONS = 3
TXN_STATE_PARTITIONS = 3  # the cluster fixture's transaction.state.log.num.partitions
PRODUCERS = 3
RUN_AFTER_KILL_S = 12.0


def same_shard_ids(count: int) -> list[str]:
    """Transactional ids that all live on ``__transaction_state``-0, so one kill
    takes their coordinator away at once."""
    ids = (f"failover-{i}" for i in range(1000))
    return [t for t in ids if partition_for(t, TXN_STATE_PARTITIONS) == 0][:count]


@dataclass
class Outcomes:
    committed: set[str] = field(default_factory=set)
    aborted: set[str] = field(default_factory=set)
    unknown: set[str] = field(default_factory=set)
    committed_after_kill: int = 0


def new_producer(clients: Clients, bootstrap: str, txn_id: str) -> Producer:
    producer = clients.producer(
        {"bootstrap.servers": bootstrap, "transactional.id": txn_id, "acks": "all",
         "transaction.timeout.ms": 10000, "message.timeout.ms": 10000}
    )  # fmt: skip
    producer.init_transactions(30)
    return producer


def run_producer(
    bootstrap: str, txn_id: str, killed: threading.Event, stop: threading.Event, out: Outcomes
) -> None:
    """Transactions writing one value to every partition, until ``stop``; each ends
    committed, aborted, or unknown (the producer is then replaced, which fences it)."""
    with Clients() as clients:
        transact(clients, bootstrap, txn_id, killed, stop, out)


def transact(
    clients: Clients,
    bootstrap: str,
    txn_id: str,
    killed: threading.Event,
    stop: threading.Event,
    out: Outcomes,
) -> None:
    producer = new_producer(clients, bootstrap, txn_id)
    n = 0
    while not stop.is_set():
        value = f"{txn_id}/{n}"
        n += 1
        after_kill = killed.is_set()
        try:
            producer.begin_transaction()
            for p in range(PARTITIONS):
                producer.produce(TOPIC, value=value, partition=p)
            producer.commit_transaction(20)
        except KafkaException as exc:
            error = exc.args[0]
            if error.txn_requires_abort():
                try:
                    producer.abort_transaction(20)
                    out.aborted.add(value)
                    continue
                except KafkaException:
                    pass
            out.unknown.add(value)
            close_producer(producer)
            producer = new_producer(clients, bootstrap, txn_id)
            continue
        out.committed.add(value)
        if after_kill:
            out.committed_after_kill += 1


def read_committed(bootstrap: str, ends: list[int]) -> dict[int, list[str]]:
    seen: dict[int, list[str]] = {p: [] for p in range(PARTITIONS)}
    done: set[int] = set()
    deadline = time.monotonic() + 60
    with Clients() as clients:
        consumer = clients.consumer(
            {"bootstrap.servers": bootstrap, "group.id": "verify", "isolation.level":
             "read_committed", "enable.auto.commit": False, "enable.partition.eof": True}
        )  # fmt: skip
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        while len(done) < PARTITIONS and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                position = consumer.position([TopicPartition(TOPIC, message.partition())])
                if position[0].offset >= ends[message.partition()]:
                    done.add(message.partition())
                continue
            seen[message.partition()].append(message.value().decode())
    assert len(done) == PARTITIONS, f"read_committed stalled: {done} of {PARTITIONS} caught up"
    return seen


def high_watermarks(bootstrap: str) -> list[int]:
    with Clients() as clients:
        consumer = clients.consumer({"bootstrap.servers": bootstrap, "group.id": "marks"})
        return [
            consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1]
            for p in range(PARTITIONS)
        ]


def test_transactions_stay_atomic_when_the_coordinator_is_sigkilled(
    start_cluster: Callable[..., LocalCluster],
) -> None:
    cluster = start_cluster(settings=("broker.session.timeout.ms=2000",))
    create_topic(cluster.bootstrap, TOPIC, PARTITIONS, 3, **{"min.insync.replicas": "2"})
    coordinator = leaders(cluster.bootstrap, "__transaction_state", TXN_STATE_PARTITIONS)[0]

    out = Outcomes()
    killed, stop = threading.Event(), threading.Event()
    threads = [
        threading.Thread(target=run_producer, args=(cluster.bootstrap, t, killed, stop, out))
        for t in same_shard_ids(PRODUCERS)
    ]
    for thread in threads:
        thread.start()
    try:
        eventually(
            lambda: len(out.committed) >= 2 * PRODUCERS,
            30,
            what="no transactions before the kill",
        )
        cluster.kill(coordinator)  # in the middle of commits of every producer
        killed.set()
        time.sleep(RUN_AFTER_KILL_S)
    finally:
        stop.set()
        for thread in threads:
            thread.join(90)
    survivors = ",".join(n.address for n in cluster.nodes.values() if n.node_id != coordinator)
    seen = read_committed(survivors, high_watermarks(survivors))

    where: dict[str, set[int]] = {}
    for partition, values in seen.items():
        assert len(values) == len(set(values)), f"partition {partition} has duplicates"
        for value in values:
            where.setdefault(value, set()).add(partition)
    torn = {v: sorted(ps) for v, ps in where.items() if len(ps) != PARTITIONS}
    assert not torn, f"transactions visible in only some partitions: {torn}"
    assert out.committed <= where.keys(), f"lost commits: {out.committed - where.keys()}"
    assert not out.aborted & where.keys(), f"aborted but visible: {out.aborted & where.keys()}"
    assert where.keys() <= out.committed | out.unknown
    assert out.committed_after_kill >= PRODUCERS, "producers did not recover"
