"""Requested against achieved op rate, and latency per op kind, in healthy periods.

Runs ``jepka test`` for each workload and requested rate (the default
cluster: 3 local nodes, RF 3, min ISR 2; no faults unless FLAGS name a
nemesis) and reads the stored history. Healthy periods are the stretches
of the main phase with no fault in force (without faults, all of it): the
achieved rate is the completed ops invoked in them per second of them,
and each ``f``'s latency p50 and p99 is over its ok completions among
those. Ops held up by a fault are due at once after it (as under Jepsen's
``stagger``), so with faults the rate in healthy periods can pass the
requested one. The CPU columns are the cores each part of the run used
in those periods: the brokers, the run's own process (the harness and its
clients) and the checker's JVM, which starts and warms up meanwhile.
Needs root for the network namespaces.

    .venv/bin/python bench/bench_workload.py [--workloads queue,txn] [--rates 100,300,1000]
        [--time-limit 20] [--concurrency 5] [-- FLAGS]
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np
from processes import ROLES, RoleSampler, broker_pids

from harness.store import HISTORY
from reports.pairs import Fault, load_pairs

ROOT = Path(__file__).resolve().parent.parent


def healthy_windows(faults: list[Fault], time_limit: float) -> list[tuple[float, float]]:
    """The stretches of the main phase (0 to the time limit) with no fault in
    force, a fault counting from the completion of its start to that of its
    stop, as the report's timeline draws it."""
    windows, t = [], 0.0
    for start, end in sorted((f.start, time_limit if f.end is None else f.end) for f in faults):
        if start > t:
            windows.append((t, min(start, time_limit)))
        t = max(t, end)
    if t < time_limit:
        windows.append((t, time_limit))
    return [(a, b) for a, b in windows if b > a]


def healthy_phase(
    history: Path, time_limit: float
) -> tuple[float, int, dict[str, list[float]], list[tuple[float, float]]]:
    """Seconds of the main phase with no fault in force, the client ops invoked
    in them that completed, ok latencies (ms) per f among those, and the
    periods themselves."""
    pairs, faults, _ = load_pairs(history)
    windows = healthy_windows(faults, time_limit)
    inside = np.zeros(len(pairs.t0), dtype=bool)
    for a, b in windows:
        inside |= (pairs.t0 >= a) & (pairs.t0 < b)
    done = inside & (pairs.invoke >= 0) & ~np.isnan(pairs.t1)  # invoked and completed
    latency: dict[str, list[float]] = defaultdict(list)
    for i in np.flatnonzero(done & (pairs.type == "ok")):
        latency[str(pairs.f[i])].append(float(pairs.t1[i] - pairs.t0[i]) * 1000)
    return sum(b - a for a, b in windows), int(done.sum()), latency, windows


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(workload: str, rate: float, args: argparse.Namespace) -> list[str]:
    store = tempfile.mkdtemp(prefix="jepka-bench-workload-")
    cmd = [
        str(ROOT / ".venv" / "bin" / "jepka"),
        "test",
        "--workload",
        workload,
        "--rate",
        f"{rate:g}",
        "--time-limit",
        f"{args.time_limit:g}",
        "--concurrency",
        str(args.concurrency),
        "--final-time-limit",
        "20",
        *args.extra,
        "--store",
        store,
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sampler = RoleSampler(proc.pid, lambda: broker_pids(Path(store)))
    proc.wait()
    sampler.stop()
    runs = [p for p in Path(store).glob("*/*") if (p / HISTORY).exists()]
    if not runs:
        return [workload, f"{rate:g}", "", "no run", "", "", ""]
    healthy, done, latency, windows = healthy_phase(runs[0] / HISTORY, args.time_limit)
    if healthy <= 0:
        return [workload, f"{rate:g}", "0", "no healthy period", "", "", ""]
    achieved = done / healthy
    cpu = dict.fromkeys(ROLES, 0.0)
    sampled = 0.0
    # the wall time of the history's time 0; absent where the run died early
    started = json.loads((runs[0] / "test.json").read_text()).get("started_at")
    for a, b in windows if started is not None else []:
        for role, seconds in sampler.between(started + a, started + b).items():
            cpu[role] += seconds
        sampled += sampler.span(started + a, started + b)
    cores = " / ".join(f"{cpu[r] / sampled:.2f}" if sampled else "-" for r in ROLES)
    per_f = "; ".join(
        f"{f} {statistics.median(v):.1f} / {quantile(v, 0.99):.1f}"
        for f, v in sorted(latency.items())
        if v
    )
    return [
        workload,
        f"{rate:g}",
        f"{healthy:.1f}",
        f"{achieved:.1f}",
        f"{achieved / rate:.0%}",
        per_f,
        cores,
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="queue,txn")
    parser.add_argument("--rates", default="100,300,1000")
    parser.add_argument("--time-limit", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, default=5)
    parser.add_argument("extra", nargs="*", help="more `jepka test` flags, after --")
    args = parser.parse_args()
    print("command:", shlex.join([".venv/bin/python", *sys.argv]))
    print(
        "| workload | requested ops/s | healthy s | achieved ops/s | share "
        "| ok latency p50 / p99 (ms) | CPU cores: brokers / run / checker |"
    )
    print("|---|---|---|---|---|---|---|")
    for workload in args.workloads.split(","):
        for rate in args.rates.split(","):
            print("| " + " | ".join(run(workload, float(rate), args)) + " |", flush=True)


if __name__ == "__main__":
    main()
