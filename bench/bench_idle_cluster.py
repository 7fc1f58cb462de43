"""What a 3-node local cluster costs at rest, and how soon its metadata moves.

Starts the default cluster (3 combined nodes, as `jepka test` runs it), then
measures:

- start: from launching the nodes to every node answering Metadata;
- idle CPU: the brokers' CPU milliseconds per second over ``--seconds``, with
  no topic yet and again after ``--topics`` topics were made;
- create_topics: the latency of each of ``--topics`` CreateTopics calls (3
  partitions, RF 3), one after the other, each answered once the controller
  quorum committed the topic.

Every test and every run's cluster pays the idle cost on the same cores as
its clients, and every topic, ISR change and leader election waits for the
metadata quorum.

    .venv/bin/python bench/bench_idle_cluster.py [--topics 15] [--seconds 15] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from confluent_kafka.admin import NewTopic
from processes import cpu_seconds

from broker.replication.local_cluster import LocalCluster
from workloads.handles import Clients


def idle_cpu_ms_per_s(pids: list[int], seconds: float) -> float:
    """The brokers' CPU milliseconds per second of wall time over ``seconds``."""
    before = cpu_seconds(*pids)
    time.sleep(seconds)
    return 1000 * (cpu_seconds(*pids) - before) / seconds


def one_run(topics: int, seconds: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as root:
        started = time.monotonic()
        cluster = LocalCluster(Path(root), 3).start()
        start_s = time.monotonic() - started
        try:
            pids = [node.proc.pid for node in cluster.nodes.values() if node.proc is not None]
            time.sleep(2)  # the first heartbeats and elections settle
            empty = idle_cpu_ms_per_s(pids, seconds)
            latencies = []
            with Clients() as clients:
                admin = clients.admin({"bootstrap.servers": cluster.bootstrap})
                for i in range(topics):
                    began = time.monotonic()
                    admin.create_topics([NewTopic(f"t{i}", 3, 3)])[f"t{i}"].result(30)
                    latencies.append(1000 * (time.monotonic() - began))
            time.sleep(2)
            with_topics = idle_cpu_ms_per_s(pids, seconds)
        finally:
            cluster.kill_all()
    return {
        "start_s": start_s,
        "idle": empty,
        "idle_topics": with_topics,
        "create_p50": statistics.median(latencies),
        "create_max": max(latencies),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=15)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(
        f"command: .venv/bin/python bench/bench_idle_cluster.py --topics {args.topics} "
        f"--seconds {args.seconds:g} --runs {args.runs}"
    )
    print(
        "| run | start (s) | idle CPU, no topic (ms/s) | idle CPU, with the topics (ms/s) "
        "| create_topics p50 / max (ms) |"
    )
    print("|---|---|---|---|---|")
    for run in range(1, args.runs + 1):
        r = one_run(args.topics, args.seconds)
        print(
            f"| {run} | {r['start_s']:.2f} | {r['idle']:.0f} | {r['idle_topics']:.0f} "
            f"| {r['create_p50']:.1f} / {r['create_max']:.1f} |"
        )


if __name__ == "__main__":
    main()
