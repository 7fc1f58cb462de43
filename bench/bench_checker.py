"""Benchmark of ``jepka check`` on synthetic histories (10 processes, 64 keys,
about 2 micro-ops per op): wall time end to end including Spark's start, ops/s,
CPU seconds and peak memory of the whole process tree (Python plus the JVM),
the check's own phase timings and Spark job counts, the graph and cycle
search's share, and the same per-key checks in single-process pandas.

    .venv/bin/python bench/bench_checker.py [--sizes 1000000,10000000] [--no-pandas]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from processes import cpu_seconds, tree

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
sys.path.insert(0, str(ROOT))


def _sample(pids: list[int]) -> tuple[int, dict[int, float]]:
    """Resident bytes of ``pids`` together, and each one's CPU seconds so far."""
    page = os.sysconf("SC_PAGE_SIZE")
    rss, cpu = 0, {}
    for p in pids:
        try:
            with open(f"/proc/{p}/statm") as f:
                rss += int(f.read().split()[1]) * page
            cpu[p] = cpu_seconds(p)
        except (OSError, IndexError, ValueError):
            pass
    return rss, cpu


def run_measured(cmd: list[str]) -> tuple[float, int, float, str]:
    """Runs ``cmd``; returns wall seconds, peak tree RSS in bytes, CPU seconds
    of the whole tree (sampled every 0.25 s: a process's last quarter second
    may be missed) and stdout. CPU seconds are the fair figure on a shared
    machine, where wall time stretches with other work's load."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    peak = 0
    cpu: dict[int, float] = {}
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            rss, now = _sample(tree(proc.pid))
            peak = max(peak, rss)
            cpu.update(now)
            done.wait(0.25)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    wall = time.perf_counter() - t0
    done.set()
    sampler.join()
    return wall, peak, sum(cpu.values()), out


def history(n_ops: int) -> Path:
    from checkers.synth import write_history

    path = OUT / f"synthetic-{n_ops}.parquet"
    if not path.exists():
        OUT.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.parquet")
        write_history(str(tmp), seed=1, n_ops=n_ops, fmt="parquet", processes=10, keys=64)
        tmp.replace(path)
    return path


def bench(n_ops: int, pandas: bool) -> dict[str, object]:
    path = history(n_ops)
    load = os.getloadavg()[0]
    wall, peak, cpu, out = run_measured(
        [str(ROOT / ".venv" / "bin" / "jepka"), "check", str(path), "--json"]
    )
    result = json.loads(out)
    timings = result["timings"]
    graph = timings.get("edges", 0) + timings.get("cycles", 0)
    row: dict[str, object] = {
        "ops": n_ops,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "ops_per_s": int(n_ops / wall),
        "peak_rss_gb": round(peak / 2**30, 2),
        "load_avg_before": round(load, 1),
        "graph_and_cycle_share": round(graph / timings["total"], 3),
        "cycle_search_s": timings.get("cycles"),
        "timings": timings,
        "spark_jobs": timings.get("spark_jobs"),
        "valid": result["valid"],
    }
    if pandas:
        pwall, ppeak, pcpu, _ = run_measured(
            [sys.executable, str(ROOT / "bench" / "pandas_checker.py"), str(path)]
        )
        row.update(
            pandas_s=round(pwall, 1),
            pandas_cpu_s=round(pcpu, 1),
            pandas_peak_rss_gb=round(ppeak / 2**30, 2),
            speedup_vs_pandas=round(pwall / wall, 2),
            cpu_ratio_vs_pandas=round(pcpu / cpu, 2) if cpu else None,
        )
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1000000,10000000")
    p.add_argument("--no-pandas", dest="pandas", action="store_false")
    args = p.parse_args()
    print("command: .venv/bin/python bench/bench_checker.py " + " ".join(sys.argv[1:]))
    for n in (int(s) for s in args.sizes.split(",")):
        print(json.dumps(bench(n, args.pandas)), flush=True)


if __name__ == "__main__":
    main()
