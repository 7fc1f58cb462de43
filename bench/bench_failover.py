"""Replicated cluster: failover time and RF=3 acks=all throughput on 3 local nodes.

Failover: time from SIGKILL of a partition leader to the first successful acks=all
produce on the new leader (the controller fences a broker whose heartbeat connection
closed after ``broker.session.disconnect.grace.ms``), over ``--trials`` kills (the
killed node is restarted and rejoins between trials). Targets: median at most 3 s;
at least 20k msgs/s RF=3 acks=all. Prints the figures and the command that made them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka.admin import ClusterMetadata, NewTopic

from broker.replication.local_cluster import LocalCluster
from workloads.handles import Clients

VALUE = b"v" * 100
SETTINGS = ["offsets.topic.num.partitions=3", "transaction.state.log.num.partitions=3"]


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    topic = NewTopic(name, partitions, 3, config={"min.insync.replicas": "2"})
    with Clients() as clients:
        admin = clients.admin({"bootstrap.servers": bootstrap})
        admin.create_topics([topic])[name].result(60)


def metadata(bootstrap: str) -> ClusterMetadata:
    """Every topic's metadata, from an admin client used once."""
    with Clients() as clients:
        return clients.admin({"bootstrap.servers": bootstrap}).list_topics(timeout=10)


def leader_of(bootstrap: str, topic: str) -> int:
    return metadata(bootstrap).topics[topic].partitions[0].leader


def throughput(bootstrap: str, count: int) -> float:
    create_topic(bootstrap, "throughput", 3)
    with Clients() as clients:
        producer = clients.producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
             "linger.ms": 5, "batch.num.messages": 10000}
        )  # fmt: skip
        start = time.perf_counter()
        for i in range(count):
            while True:
                try:
                    producer.produce("throughput", VALUE, partition=i % 3)
                    break
                except BufferError:
                    producer.poll(0.01)
        assert producer.flush(120) == 0
        return count / (time.perf_counter() - start)


def one_failover(cluster: LocalCluster, topic: str) -> float:
    """Seconds from SIGKILL of the leader to the first acks=all write acknowledged."""
    leader = leader_of(cluster.bootstrap, topic)
    survivors = ",".join(n.address for n in cluster.nodes.values() if n.node_id != leader)
    outcome: list[object] = []
    with Clients() as clients:
        producer = clients.producer(
            {"bootstrap.servers": survivors, "acks": "all", "linger.ms": 0,
             "retry.backoff.ms": 20, "retry.backoff.max.ms": 50,
             "topic.metadata.refresh.interval.ms": 100}
        )  # fmt: skip
        producer.list_topics(topic, timeout=10)
        killed = time.perf_counter()
        cluster.kill(leader)
        while True:
            outcome.clear()
            producer.produce(topic, VALUE, partition=0, on_delivery=lambda e, _m: outcome.append(e))
            producer.flush(30)
            if outcome and outcome[0] is None:
                elapsed = time.perf_counter() - killed
                break
            time.sleep(0.01)
    cluster.restart(leader)
    return elapsed


def wait_full_isr(bootstrap: str, topic: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        known = metadata(bootstrap).topics.get(topic)
        if known is not None and len(known.partitions[0].isrs) == 3:
            return
        time.sleep(0.2)
    raise RuntimeError(f"{topic} did not get its full ISR back")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--session-timeout-ms", type=int, default=9000)
    parser.add_argument("--disconnect-grace-ms", type=int, default=1500)
    args = parser.parse_args()
    settings = [
        *SETTINGS,
        f"broker.session.timeout.ms={args.session_timeout_ms}",
        f"broker.session.disconnect.grace.ms={args.disconnect_grace_ms}",
    ]
    with tempfile.TemporaryDirectory() as root:
        cluster = LocalCluster(Path(root), 3, settings)
        try:
            cluster.start()
            rate = throughput(cluster.bootstrap, args.messages)
            create_topic(cluster.bootstrap, "failover", 1)
            times = []
            for _ in range(args.trials):
                wait_full_isr(cluster.bootstrap, "failover")
                times.append(one_failover(cluster, "failover"))
        finally:
            cluster.kill_all()
    times.sort()
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(f"RF=3 acks=all produce: {rate:,.0f} msgs/s ({args.messages} x 100 B, 3 partitions)")
    print(
        f"failover (SIGKILL of the leader to first acks=all ack), {args.trials} trials, "
        f"session timeout {args.session_timeout_ms} ms, disconnect grace "
        f"{args.disconnect_grace_ms} ms: median {statistics.median(times):.2f} s, "
        f"p95 {p95:.2f} s"
    )


if __name__ == "__main__":
    main()
