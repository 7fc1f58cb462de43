"""Where a small transaction's time goes on a 3-node reference cluster.

Runs the txn workload's kind of transaction with one transactional producer
(acks=all, linger.ms=0, as the workload's clients) on a 3-node LocalCluster
(RF 3, min ISR 2, Kafka's default internal-topic partition counts): begin, a
send and flush to one partition, a send and flush to another,
send_offsets_to_transaction, commit. Prints each step's p50/p90, the first
AddPartitionsToTxn answers of CONCURRENT_TRANSACTIONS per transaction (the
previous commit's markers still being written; librdkafka retries after 20
ms), the brokers' CPU time per transaction, and, before that, a plain acks=all
send and flush. With ``--gap-ms`` the producer waits that long after each
commit, so that the coordinator has finished it when the next transaction
begins (the brokers' CPU per transaction then includes their idle work
during the gap). Prefer the counts and CPU time to the latencies on a busy
machine.

    .venv/bin/python bench/bench_txn_steps.py [--transactions 60] [--gap-ms 0]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from processes import cpu_seconds

from broker.replication.local_cluster import LocalCluster

TOPIC = "bench-steps"
STEPS = ("send 1", "send 2", "send_offsets", "commit", "transaction")


class ConcurrentAnswers(logging.Handler):
    """Counts librdkafka's AddPartitionsToTxn CONCURRENT_TRANSACTIONS answers."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "AddPartitionsToTxn response" in message and "concurrent operation" in message:
            self.count += 1


def p50_p90(values: list[float]) -> str:
    ordered = sorted(values)
    return f"{statistics.median(ordered):.1f} / {ordered[int(0.9 * (len(ordered) - 1))]:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transactions", type=int, default=60)
    parser.add_argument("--gap-ms", type=float, default=0.0, help="wait after each commit")
    args = parser.parse_args()
    print(
        "command: .venv/bin/python bench/bench_txn_steps.py "
        f"--transactions {args.transactions} --gap-ms {args.gap_ms:g}"
    )
    with tempfile.TemporaryDirectory() as root:
        cluster = LocalCluster(Path(root), 3).start()
        try:
            run(cluster, args.transactions, args.gap_ms / 1000)
        finally:
            cluster.kill_all()
    sys.stdout.flush()


def run(cluster: LocalCluster, count: int, gap_s: float) -> None:
    bootstrap = cluster.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic(TOPIC, 3, 3, config={"min.insync.replicas": "2"})
    admin.create_topics([topic])[TOPIC].result(30)
    time.sleep(1.5)  # every node applies the topic's metadata
    conf = {
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": 0,
    }
    plain = Producer(conf)
    sends = []
    for i in range(count + 5):
        started = time.perf_counter()
        plain.produce(TOPIC, b"p", partition=i % 3)
        plain.flush(10)
        sends.append((time.perf_counter() - started) * 1000)
    concurrent = ConcurrentAnswers()
    logger = logging.getLogger("bench-txn-steps")
    logger.addHandler(concurrent)
    logger.setLevel(logging.DEBUG)
    producer = Producer(
        {**conf, "transactional.id": "bench-steps", "debug": "eos", "logger": logger}
    )
    producer.init_transactions(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-steps"})
    steps: dict[str, list[float]] = {step: [] for step in STEPS}
    pids = [node.proc.pid for node in cluster.nodes.values() if node.proc is not None]
    for i in range(-3, count):  # three to warm up
        if i == 0:
            concurrent.count = 0
            cpu_before = cpu_seconds(*pids)
        marks = [time.perf_counter()]
        producer.begin_transaction()
        for partition in (i % 3, (i + 1) % 3):
            producer.produce(TOPIC, b"t", partition=partition)
            producer.flush(10)
            marks.append(time.perf_counter())
        offsets = [TopicPartition(TOPIC, 0, max(i, 0))]
        producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 10)
        marks.append(time.perf_counter())
        producer.commit_transaction(10)
        marks.append(time.perf_counter())
        if i >= 0:
            for step, start, end in zip(STEPS, marks, marks[1:], strict=False):
                steps[step].append((end - start) * 1000)
            steps["transaction"].append((marks[-1] - marks[0]) * 1000)
        time.sleep(gap_s)
    cpu = cpu_seconds(*pids) - cpu_before
    consumer.close()
    print(f"plain acks=all send and flush, p50 / p90: {p50_p90(sends[5:])} ms")
    for step in STEPS:
        print(f"{step}, p50 / p90: {p50_p90(steps[step])} ms")
    print(f"CONCURRENT_TRANSACTIONS answers per transaction: {concurrent.count / count:.2f}")
    print(f"broker CPU per transaction (3 nodes): {cpu * 1000 / count:.1f} ms")


if __name__ == "__main__":
    main()
