"""Reference broker throughput and latency with confluent-kafka on one node.

Targets: at least 50k msgs/s produce and 50k msgs/s consume (100-byte values,
batching on), and a produce p99 of at most 20 ms at 1k msgs/s. Variants:
plain (acks=1), idempotent (acks=all) and transactional (commits every
``--txn-size`` messages). Prints the figures and the command that made them.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from confluent_kafka import TopicPartition
from confluent_kafka.admin import NewTopic

from broker.launcher import BrokerProcess
from workloads.handles import Clients

VALUE = b"v" * 100
PARTITIONS = 3


def create_topic(bootstrap: str, name: str) -> None:
    with Clients() as clients:
        admin = clients.admin({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(name, PARTITIONS, 1)])[name].result(30)


def produce(bootstrap: str, topic: str, count: int, variant: str, txn_size: int) -> float:
    """Produces ``count`` values; returns msgs/s from first send to last ack."""
    settings: dict[str, object] = {"bootstrap.servers": bootstrap, "linger.ms": 5}
    if variant == "plain":
        settings.update({"acks": 1, "enable.idempotence": False})
    elif variant == "idempotent":
        settings.update({"acks": "all", "enable.idempotence": True})
    else:
        settings.update({"transactional.id": f"bench-{topic}"})
    with Clients() as clients:
        producer = clients.producer(settings)
        if variant == "transactional":
            producer.init_transactions(30)
        start = time.perf_counter()
        for i in range(count):
            if variant == "transactional" and i % txn_size == 0:
                if i:
                    producer.commit_transaction(30)
                producer.begin_transaction()
            while True:
                try:
                    producer.produce(topic, VALUE, partition=i % PARTITIONS)
                    break
                except BufferError:
                    producer.poll(0.01)
        if variant == "transactional":
            producer.commit_transaction(60)
        if producer.flush(120):
            raise RuntimeError("messages left unacknowledged")
        return count / (time.perf_counter() - start)


def consume(bootstrap: str, topic: str, count: int, isolation: str) -> float:
    with Clients() as clients:
        consumer = clients.consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "bench",
                "enable.auto.commit": False,
                "isolation.level": isolation,
            }
        )
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        got = 0
        start = time.perf_counter()
        deadline = start + 120
        while got < count and time.perf_counter() < deadline:
            for msg in consumer.consume(10_000, 1.0):
                if msg.error() is None:
                    got += 1
    if got < count:
        raise RuntimeError(f"consumed only {got} of {count}")
    return count / (time.perf_counter() - start)


def latency(
    bootstrap: str, topic: str, rate: int, seconds: float, linger_ms: float
) -> tuple[float, float]:
    """Produce latency at a fixed rate (idempotent, acks=all): p50 and p99 in ms.

    Each message's latency is librdkafka's own measure from ``produce()`` to its
    delivery report (``Message.latency()``), so Python's polling adds nothing;
    the loop sleeps between sends to leave the CPU to the broker.
    """
    latencies: list[float] = []

    def report(err: object, msg: object) -> None:
        if err is None:
            latencies.append(msg.latency())

    with Clients() as clients:
        producer = clients.producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": linger_ms,
            }
        )
        producer.produce(topic, VALUE)
        producer.flush(30)  # connection and producer id set up outside the measurement
        start = time.perf_counter()
        for i in range(int(rate * seconds)):
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            producer.produce(topic, VALUE, on_delivery=report)
            producer.poll(0)
        producer.flush(30)
    quantiles = statistics.quantiles(latencies, n=100)
    return quantiles[49] * 1000, quantiles[98] * 1000


def broker_produce_times(data_dir: Path) -> str:
    """The Produce line of the request-time summary a broker logs at shutdown."""
    for line in (data_dir / "broker.log").read_text().splitlines():
        if "request times produce:" in line:
            return line.split("request times ", 1)[1]
    return "no produce summary logged"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--txn-size", type=int, default=5_000)
    parser.add_argument("--latency-seconds", type=float, default=5.0)
    parser.add_argument("--variants", default="plain,idempotent,transactional")
    parser.add_argument("--latency-linger-ms", type=float, default=5.0)
    args = parser.parse_args()
    print(
        f"command: .venv/bin/python bench/bench_broker.py --messages {args.messages} "
        f"--txn-size {args.txn_size} --latency-seconds {args.latency_seconds:g} "
        f"--latency-linger-ms {args.latency_linger_ms:g} --variants {args.variants}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp) / "throughput").start()
        try:
            for variant in filter(None, args.variants.split(",")):
                topic = f"bench-{variant}"
                create_topic(broker.bootstrap, topic)
                rate = produce(broker.bootstrap, topic, args.messages, variant, args.txn_size)
                isolation = "read_committed" if variant == "transactional" else "read_uncommitted"
                consumed = consume(broker.bootstrap, topic, args.messages, isolation)
                mb = len(VALUE) / 1e6
                print(
                    f"{variant:>13}: produce {rate:9,.0f} msgs/s {rate * mb:6.1f} MB/s | "
                    f"consume {consumed:9,.0f} msgs/s {consumed * mb:6.1f} MB/s"
                )
        finally:
            broker.stop()
        # a broker of its own, so its request-time summary covers only this phase
        broker = BrokerProcess(Path(tmp) / "latency").start()
        try:
            create_topic(broker.bootstrap, "bench-latency")
            linger = args.latency_linger_ms
            p50, p99 = latency(
                broker.bootstrap, "bench-latency", 1000, args.latency_seconds, linger
            )
        finally:
            broker.stop()
        print(
            f"      latency: 1k msgs/s idempotent acks=all linger.ms={linger:g}: "
            f"p50 {p50:.1f} ms, p99 {p99:.1f} ms"
        )
        print(f"  broker side: {broker_produce_times(Path(tmp) / 'latency')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
