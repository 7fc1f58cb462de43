"""Group and transaction coordinators of the reference broker, with confluent-kafka.

Measures what the coordinators add to a client's path: small transactions
(one record on each of three partitions plus ``send_offsets_to_transaction``,
then commit) per second with commit latency p50/p99, and the time from
``subscribe`` until a group of N consumers is stable with every partition
assigned. Prints the figures and the command that made them.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from confluent_kafka import TopicPartition
from confluent_kafka.admin import NewTopic
from txn_timing import time_transactions

from broker.launcher import BrokerProcess
from workloads.handles import Clients

PARTITIONS = 3


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    with Clients() as clients:
        admin = clients.admin({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)


def small_transactions(bootstrap: str, count: int) -> tuple[float, float, float]:
    """Returns transactions/s and commit latency p50, p99 in ms."""
    create_topic(bootstrap, "bench-txn", PARTITIONS)
    with Clients() as clients:
        conf = {"bootstrap.servers": bootstrap}
        producer = clients.producer({**conf, "transactional.id": "bench-small"})
        producer.init_transactions(30)
        consumer = clients.consumer({**conf, "group.id": "bench-txn-group"})
        metadata = consumer.consumer_group_metadata()

        def send_offsets(i: int) -> None:
            offsets = [TopicPartition("bench-txn", p, i + 1) for p in range(PARTITIONS)]
            producer.send_offsets_to_transaction(offsets, metadata, 30)

        return time_transactions(producer, "bench-txn", PARTITIONS, count, send_offsets)


def group_settle_time(bootstrap: str, members: int) -> float:
    """Seconds from the first subscribe until every partition is assigned."""
    topic = f"bench-group-{members}"
    create_topic(bootstrap, topic, members * 2)
    with Clients() as clients:
        consumers = [
            clients.consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{members}"})
            for _ in range(members)
        ]
        start = time.perf_counter()
        for consumer in consumers:
            consumer.subscribe([topic])
        while time.perf_counter() - start < 120:
            for consumer in consumers:
                consumer.poll(0.01)
            owned = [len(c.assignment()) for c in consumers]
            if all(n == 2 for n in owned):
                return time.perf_counter() - start
        raise RuntimeError("group did not settle within 120 s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transactions", type=int, default=500)
    parser.add_argument("--members", type=int, default=3)
    args = parser.parse_args()
    print(
        f"command: .venv/bin/python bench/bench_coordinators.py "
        f"--transactions {args.transactions} --members {args.members}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        # Kafka's default initial delay (3 s) would dominate the settle time.
        settings = ["group.initial.rebalance.delay.ms=0"]
        broker = BrokerProcess(Path(tmp) / "node1", settings).start()
        try:
            rate, p50, p99 = small_transactions(broker.bootstrap, args.transactions)
            print(
                f" transactions: {rate:7.1f} txn/s (3 partitions + offsets each) | "
                f"commit p50 {p50:.1f} ms, p99 {p99:.1f} ms"
            )
            settle = group_settle_time(broker.bootstrap, args.members)
            print(
                f"        group: {args.members} consumers stable with all partitions "
                f"assigned after {settle:.2f} s (group.initial.rebalance.delay.ms=0)"
            )
        finally:
            broker.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
