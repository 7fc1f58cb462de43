"""Raft controller quorum: election time after the leader dies, and commit rate over
the durable file log.

- failover: 3 voters with the default timeouts (election 1 s, fetch 2 s) on the
  simulated network (1-5 ms delays); the leader is crashed once committed, and the
  virtual time until a new leader is ready to act as controller is measured over
  ``--trials`` seeds. Virtual time makes the figure exact and independent of load.
- commit rate: 3 voters on ``FileLog`` (fsync on every append) in one process; the
  leader appends one record per step and every node's fsyncs are real, so this is
  wall-clock metadata records committed per second.
Prints the figures and the command that made them.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from broker.raft.client import RaftConfig
from broker.raft.file_log import FileLog
from broker.raft.simulation import TICK_MS, SimCluster


def converge(cluster: SimCluster, limit_ms: int = 60_000) -> int:
    """Virtual ms until a ready leader whose log everyone has committed."""
    for elapsed in range(0, limit_ms, TICK_MS):
        cluster.step()
        leader = cluster.leader()
        if leader is not None and all(
            n.client and n.client.high_watermark == leader.log.end_offset for n in cluster.live()
        ):
            return elapsed
    raise RuntimeError("no leader")


def failover_ms(seed: int) -> int:
    cluster = SimCluster(3, seed, config=RaftConfig())
    cluster.network.max_delay_ms = 5
    converge(cluster)
    leader = cluster.leader()
    assert leader is not None
    cluster.crash(leader.node_id)
    for elapsed in range(TICK_MS, 60_000, TICK_MS):
        cluster.step()
        if cluster.leader() is not None:
            return elapsed
    raise RuntimeError("no new leader")


def commit_rate(records: int, batch: int) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        cluster = SimCluster(
            3, 1, log_factory=lambda i: FileLog(Path(tmp) / f"n{i}"), snapshot_every=10**9
        )
        cluster.network.max_delay_ms = 1
        converge(cluster)
        start_hw = cluster.max_leader_hw
        began = time.perf_counter()
        leader = cluster.leader()
        assert leader is not None
        for i in range(0, records, batch):
            leader.append([b"r%d" % j for j in range(i, min(records, i + batch))])
            cluster.step()
        converge(cluster)
        seconds = time.perf_counter() - began
        return (cluster.max_leader_hw - start_hw) / seconds, cluster.max_leader_hw - start_hw


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--batches", default="1,100", help="records per append, comma-separated")
    args = parser.parse_args()
    print(
        f"command: .venv/bin/python bench/bench_raft.py --trials {args.trials} "
        f"--records {args.records} --batches {args.batches}"
    )
    times = sorted(failover_ms(seed) for seed in range(1, args.trials + 1))
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    print(
        f"controller failover (virtual time, {args.trials} trials): "
        f"median {statistics.median(times):.0f} ms, p95 {p95} ms, max {times[-1]} ms"
    )
    for batch in (int(b) for b in args.batches.split(",")):
        rate, committed = commit_rate(args.records, batch)
        print(
            f"commit rate, 3 voters, fsync per append, {batch} records per append: "
            f"{rate:,.0f} records/s ({committed} entries)"
        )


if __name__ == "__main__":
    main()
