"""What consumers following every partition cost the brokers' sends.

On a 3-node LocalCluster (RF 3, min ISR 2) with one topic of 8 partitions
(the queue workload's 8 keys), ``--producers`` threads each send one
record and wait for its acks=all acknowledgement, one after another, for
``--seconds``, beside each count of ``--consumers`` read_committed
consumers that follow every partition and poll all the while as the
workload's clients poll (``consume_ready``); the clients are configured
by the workloads' ``ClientConfig``. Each high watermark advance answers
every consumer's waiting fetch of that partition, so the brokers' work
per send grows with the readers. Prints, per consumer count, the sends a
second, their p50 / p99 and the CPU per send of the brokers and of the
clients' process. Run it on an idle machine: the clients and the brokers
share its cores.

    .venv/bin/python bench/bench_fanout.py [--producers 10] [--consumers 0,5,10] [--seconds 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import OFFSET_END, KafkaError, TopicPartition
from confluent_kafka.admin import NewTopic
from processes import cpu_seconds

from broker.replication.local_cluster import LocalCluster
from workloads.config import ClientConfig
from workloads.consuming import consume_ready
from workloads.handles import Clients

TOPIC = "bench-fanout"
PARTITIONS = 8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--producers", type=int, default=10)
    parser.add_argument("--consumers", default="0,5,10")
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    if args.producers < 1:
        parser.error("--producers must be at least 1")
    print(
        f"command: .venv/bin/python bench/bench_fanout.py --producers {args.producers} "
        f"--consumers {args.consumers} --seconds {args.seconds:g}"
    )
    print(
        "| consumers | sends/s | send p50 / p99 (ms) | brokers' CPU per send (ms) "
        "| clients' CPU per send (ms) |"
    )
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as root:
        cluster = LocalCluster(Path(root), 3).start()
        try:
            config = ClientConfig(cluster.bootstrap, tuple(range(PARTITIONS)))
            with Clients() as clients:
                admin = clients.admin(config.admin_conf())
                topic = NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})
                admin.create_topics([topic])[TOPIC].result(30)
            time.sleep(1.5)  # every node applies the topic's metadata
            pids = [node.proc.pid for node in cluster.nodes.values() if node.proc is not None]
            for consumers in (int(c) for c in args.consumers.split(",")):
                print(row(config, pids, args.producers, consumers, args.seconds), flush=True)
        finally:
            cluster.kill_all()


def row(
    config: ClientConfig, pids: list[int], producers: int, consumers: int, seconds: float
) -> str:
    """One consumer count's figures; raises the first error a client thread met."""
    latencies: list[float] = []
    failed: list[BaseException] = []
    ready = threading.Barrier(producers + consumers + 1, timeout=60)
    stop = threading.Event()

    def send(first: int) -> None:
        producer = clients.producer(config.producer_conf(first))
        errors: list[KafkaError] = []

        def delivered(err: KafkaError | None, _msg: object) -> None:
            if err is not None:
                errors.append(err)

        def acknowledged(partition: int) -> None:
            producer.produce(TOPIC, b"v", partition=partition, on_delivery=delivered)
            if producer.flush(config.op_timeout_s) or errors:
                raise RuntimeError(f"a send failed: {errors[0] if errors else 'no answer'}")

        acknowledged(first % PARTITIONS)  # the metadata lookup, before the clock starts
        ready.wait()
        i = first
        while not stop.is_set():
            started = time.perf_counter()
            acknowledged(i % PARTITIONS)
            latencies.append((time.perf_counter() - started) * 1000)
            i += 1

    def follow() -> None:
        consumer = clients.consumer(config.consumer_conf())
        consumer.assign([TopicPartition(TOPIC, p, OFFSET_END) for p in range(PARTITIONS)])
        ready.wait()
        while not stop.is_set():
            for msg in consume_ready(consumer, config.poll_s):
                err = msg.error()
                if err is not None and err.code() != KafkaError._PARTITION_EOF:
                    raise RuntimeError(f"a read failed: {err}")

    def guarded(body: Callable[..., None], *args: int) -> None:
        try:
            body(*args)
        except BaseException as e:
            failed.append(e)
            stop.set()
            ready.abort()

    with Clients() as clients:
        threads = [threading.Thread(target=guarded, args=(send, i)) for i in range(producers)]
        threads += [threading.Thread(target=guarded, args=(follow,)) for _ in range(consumers)]
        for thread in threads:
            thread.start()
        try:
            ready.wait()
            started = time.perf_counter()
            brokers_before, clients_before = cpu_seconds(*pids), cpu_seconds(os.getpid())
            stop.wait(seconds)
            done = list(latencies)
            elapsed = time.perf_counter() - started
            brokers_cpu = cpu_seconds(*pids) - brokers_before
            clients_cpu = cpu_seconds(os.getpid()) - clients_before
        except threading.BrokenBarrierError:
            if not failed:
                raise
        finally:
            stop.set()
            for thread in threads:
                thread.join()
    if failed:
        raise failed[0]
    if len(done) < 2:
        raise RuntimeError(f"{len(done)} send(s) acknowledged in {seconds:g} s")
    p99 = statistics.quantiles(done, n=100)[98]
    return (
        f"| {consumers} | {len(done) / elapsed:.0f} | {statistics.median(done):.1f} / "
        f"{p99:.1f} | {brokers_cpu * 1000 / len(done):.2f} | "
        f"{clients_cpu * 1000 / len(done):.2f} |"
    )


if __name__ == "__main__":
    main()
