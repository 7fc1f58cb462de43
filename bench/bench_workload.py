"""Requested against achieved op rate, and latency per op kind, on a healthy cluster.

Runs ``jepka test`` without faults for each workload and requested rate
(the default cluster: 3 local nodes, RF 3, min ISR 2) and reads the stored
history: the achieved rate of the main phase (completed ops per second
over the time limit) and each ``f``'s latency p50 and p99 over its ok
completions. Needs root for the network namespaces.

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

ROOT = Path(__file__).resolve().parent.parent


def main_phase(history: Path, time_limit: float) -> tuple[int, dict[str, list[float]]]:
    """Completed client ops invoked within the time limit, and ok latencies (ms) per f."""
    invoked: dict[object, dict[str, object]] = {}
    done = 0
    latency: dict[str, list[float]] = defaultdict(list)
    for text in history.read_text().splitlines():
        op = json.loads(text)
        if op["process"] == "nemesis" or op.get("final"):
            continue
        if op["type"] == "invoke":
            invoked[op["process"]] = op
            continue
        start = invoked.pop(op["process"], None)
        if start is None or start["time"] > time_limit * 1e9:
            continue
        done += 1
        if op["type"] == "ok":
            latency[op["f"]].append((op["time"] - start["time"]) / 1e6)
    return done, latency


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
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    runs = [p for p in Path(store).glob("*/*") if (p / "history.jsonl").exists()]
    if not runs:
        return [workload, f"{rate:g}", "no run", "", ""]
    done, latency = main_phase(runs[0] / "history.jsonl", args.time_limit)
    achieved = done / args.time_limit
    per_f = "; ".join(
        f"{f} {statistics.median(v):.1f} / {quantile(v, 0.99):.1f}"
        for f, v in sorted(latency.items())
        if v
    )
    return [workload, f"{rate:g}", f"{achieved:.1f}", f"{achieved / rate:.0%}", per_f]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="queue,txn")
    parser.add_argument("--rates", default="100,300,1000")
    parser.add_argument("--time-limit", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, default=5)
    parser.add_argument("extra", nargs="*", help="more `jepka test` flags, after --")
    args = parser.parse_args()
    print("command:", shlex.join([".venv/bin/python", *sys.argv]))
    print("| workload | requested ops/s | achieved ops/s | share | ok latency p50 / p99 (ms) |")
    print("|---|---|---|---|---|")
    for workload in args.workloads.split(","):
        for rate in args.rates.split(","):
            print("| " + " | ".join(run(workload, float(rate), args)) + " |", flush=True)


if __name__ == "__main__":
    main()
