"""Transactions on a replicated 3-node reference cluster, with confluent-kafka.

Measures what replication adds to a transaction: small transactions (one record on
each of three partitions, led by different nodes, RF 3, min ISR 2) per second with
commit latency p50/p99, and the time from SIGKILL of the transaction coordinator's
node until the same producer's next transaction commits (through the coordinator
that took over). Prints the figures and the command that made them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import NewTopic
from txn_timing import time_transactions

from broker.coordinator.partitioning import partition_for
from broker.replication.local_cluster import LocalCluster
from workloads.handles import Clients, close_producer

TOPIC = "bench-txn"
PARTITIONS = 3
TXN_STATE_PARTITIONS = 3
SETTINGS = [
    f"transaction.state.log.num.partitions={TXN_STATE_PARTITIONS}",
    "offsets.topic.num.partitions=3",
    "broker.session.timeout.ms=2000",
    "broker.session.disconnect.grace.ms=1500",
]


def coordinator_of(bootstrap: str, txn_id: str) -> int:
    """The leader of the transactional id's ``__transaction_state`` partition."""
    with Clients() as clients:
        topic = clients.admin({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
    partition = partition_for(txn_id, TXN_STATE_PARTITIONS)
    return topic["__transaction_state"].partitions[partition].leader


def commit_one(producer: Producer, value: bytes) -> None:
    producer.begin_transaction()
    for partition in range(PARTITIONS):
        producer.produce(TOPIC, value, partition=partition)
    producer.commit_transaction(30)


def small_transactions(bootstrap: str, count: int) -> tuple[float, float, float]:
    """Returns transactions/s and commit latency p50, p99 in ms."""
    with Clients() as clients:
        producer = clients.producer(
            {"bootstrap.servers": bootstrap, "transactional.id": "bench-rate"}
        )
        producer.init_transactions(30)
        return time_transactions(producer, TOPIC, PARTITIONS, count)


def coordinator_failover(cluster: LocalCluster, trial: int) -> float:
    """Seconds from SIGKILL of the coordinator's node to the next commit."""
    txn_id = f"bench-failover-{trial}"
    with Clients() as clients:
        producer = clients.producer(
            {"bootstrap.servers": cluster.bootstrap, "transactional.id": txn_id,
             "transaction.timeout.ms": 10000}
        )  # fmt: skip
        producer.init_transactions(30)
        commit_one(producer, b"before")
        victim = coordinator_of(cluster.bootstrap, txn_id)
        cluster.kill(victim)
        killed = time.perf_counter()
        while True:
            try:
                commit_one(producer, b"after")
                break
            except KafkaException as exc:
                if exc.args[0].txn_requires_abort():
                    producer.abort_transaction(30)
                elif not exc.args[0].retriable():
                    close_producer(producer)
                    producer = clients.producer(
                        {"bootstrap.servers": cluster.bootstrap, "transactional.id": txn_id}
                    )
                    producer.init_transactions(30)
        elapsed = time.perf_counter() - killed
    cluster.restart(victim)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transactions", type=int, default=300)
    parser.add_argument("--failovers", type=int, default=3)
    args = parser.parse_args()
    print(
        "command: .venv/bin/python bench/bench_txn_cluster.py "
        f"--transactions {args.transactions} --failovers {args.failovers}"
    )
    with tempfile.TemporaryDirectory() as root:
        cluster = LocalCluster(Path(root), 3, SETTINGS).start()
        try:
            topic = NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})
            with Clients() as clients:
                admin = clients.admin({"bootstrap.servers": cluster.bootstrap})
                admin.create_topics([topic])[TOPIC].result(30)
            time.sleep(1)  # every node applies the new topic's metadata
            rate, p50, p99 = small_transactions(cluster.bootstrap, args.transactions)
            print(
                f"3 nodes, RF 3: {rate:.1f} transactions/s (one record on each of "
                f"{PARTITIONS} partitions), commit p50 {p50:.1f} ms, p99 {p99:.1f} ms"
            )
            times = [coordinator_failover(cluster, t) for t in range(args.failovers)]
            print(
                f"coordinator SIGKILL to next commit: median {statistics.median(times):.2f} s, "
                f"max {max(times):.2f} s over {len(times)} trials"
            )
        finally:
            cluster.kill_all()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
