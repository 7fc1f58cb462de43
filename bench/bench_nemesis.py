"""Fault costs on a real local cluster, and the speed of pure schedules.

Measures: generating a seeded schedule (ops/s, no cluster); bringing a
local cluster (3 nodes, or `--nodes`) up and down; and, per fault, how long
applying it and healing it take (median of `--repeat` rounds): a kill's heal
restarts the killed brokers and waits until each is up, and the nemesis
waits for it before its next op. These bound how short a
`--fault-length` can usefully be. Prints the figures and the command.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid

from harness.cluster import Cluster, ClusterSpec
from nemesis.package import build

FAULTS = [
    ("partition", {"f": "start-partition", "value": "majority"}, {"f": "stop-partition"}),
    ("pause", {"f": "pause", "value": "one"}, {"f": "resume", "value": "all"}),
    ("kill", {"f": "kill", "value": "one"}, {"f": "start", "value": "all"}),
    ("kill all", {"f": "kill", "value": "all"}, {"f": "start", "value": "all"}),
    (
        "clock",
        {"f": "bump-clock", "value": {"targets": "all", "delta_ms": 5000}},
        {"f": "reset-clock", "value": "all"},
    ),
]


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench_schedule(duration: float) -> tuple[int, float]:
    pkg = build("kill,pause,partition,clock,lose-unfsynced", seed=1, interval=0.05)
    t0 = time.perf_counter()
    ops = pkg.schedule(duration)
    return len(ops), time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--schedule-seconds", type=float, default=3600)
    parser.add_argument("--nodes", type=int, default=3)
    args = parser.parse_args()
    print(
        f"command: .venv/bin/python bench/bench_nemesis.py --repeat {args.repeat} "
        f"--schedule-seconds {args.schedule_seconds:g} --nodes {args.nodes}"
    )
    n, dt = bench_schedule(args.schedule_seconds)
    print(
        f"    schedule: {n:,} ops over {args.schedule_seconds:g} s of test in {dt:.2f} s "
        f"({n / dt:,.0f} ops/s)"
    )
    with tempfile.TemporaryDirectory() as store:
        spec = ClusterSpec(name=f"bench{uuid.uuid4().hex[:6]}", nodes=args.nodes)
        t0 = time.perf_counter()
        cluster = Cluster.up(spec, store)
        up = time.perf_counter() - t0
        try:
            pkg = build("kill,pause,partition,clock", seed=1)
            ctx = cluster.nemesis_context(seed=1)
            for name, start, stop in FAULTS:
                apply, heal = [], []
                for _ in range(args.repeat):
                    apply.append(
                        timed(lambda s=start: pkg.nemesis.invoke(ctx, {"process": "nemesis", **s}))
                    )
                    heal.append(
                        timed(lambda s=stop: pkg.nemesis.invoke(ctx, {"process": "nemesis", **s}))
                    )
                print(
                    f"{name:>12}: apply {statistics.median(apply) * 1000:7.1f} ms | "
                    f"heal {statistics.median(heal) * 1000:7.1f} ms (median of {args.repeat})"
                )
            full = timed(cluster.heal)
        finally:
            down = timed(cluster.down)
    print(
        f"     cluster: {args.nodes}-node local up {up:.2f} s (brokers ready) "
        f"| heal-all {full * 1000:.0f} ms"
        f" | down {down:.2f} s"
    )


if __name__ == "__main__":
    main()
