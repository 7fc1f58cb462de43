"""History layer throughput: generating synthetic histories and reading them
into the flat table (the checker's first step), per format.

An "op" is an invocation plus its completion (two lines); the synthetic mix
is jepka's default (10 processes, 64 keys, about 2 micro-ops per op).
Prints each figure with the command that made it.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from collections.abc import Callable
from typing import Any

from checkers.synth import write_history
from history import read_flat


def cpu_seconds() -> float:
    """CPU time of this process and its finished workers: on a shared machine
    the fair measure next to wall time."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), cpu_seconds()
    out = fn()
    return out, time.perf_counter() - wall, cpu_seconds() - cpu


def peak_mb() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, kids) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=1_000_000, help="ops per history")
    parser.add_argument("--seed", type=int, default=1)
    args, _ = parser.parse_known_args()
    command = f".venv/bin/python bench/bench_history.py --ops {args.ops}"
    load = os.getloadavg()[0]
    print(f"# {command}  (cores: {os.cpu_count()}, load average {load:.1f})")
    with tempfile.TemporaryDirectory() as tmp:
        jsonl, parquet = os.path.join(tmp, "h.jsonl"), os.path.join(tmp, "h.parquet")
        lines, wall, cpu = timed(lambda: write_history(jsonl, args.seed, args.ops))
        size = os.path.getsize(jsonl) / 2**20
        print(
            f"synth → jsonl: {args.ops:,} ops, {lines:,} lines, {size:,.0f} MiB; "
            f"{wall:.1f} s wall, {cpu:.1f} s CPU ({args.ops / cpu:,.0f} ops per CPU-second)"
        )
        _, wall, cpu = timed(lambda: write_history(parquet, args.seed, args.ops))
        print(
            f"synth → parquet: {wall:.1f} s wall, {cpu:.1f} s CPU "
            f"({args.ops / cpu:,.0f} ops per CPU-second)"
        )
        for workers in (1, os.cpu_count() or 1):
            table, wall, cpu = timed(lambda w=workers: read_flat(jsonl, workers=w))
            print(
                f"read jsonl, {workers} process(es): {lines / wall:,.0f} lines/s wall "
                f"({wall:.1f} s), {lines / cpu:,.0f} lines per CPU-second; "
                f"{table.num_rows:,} rows"
            )
        table, wall, cpu = timed(lambda: read_flat(parquet))
        print(f"read parquet: {lines / wall:,.0f} lines/s wall ({wall:.1f} s, {cpu:.1f} s CPU)")
        edn = os.path.join(tmp, "h.edn")
        write_history(edn, args.seed, args.ops, fmt="jepsen-edn")
        table, wall, cpu = timed(lambda: read_flat(edn, "jepsen-edn"))
        print(
            f"read Jepsen EDN: {lines / wall:,.0f} lines/s wall ({wall:.1f} s), "
            f"{lines / cpu:,.0f} lines per CPU-second; {table.num_rows:,} rows"
        )
    print(f"peak RSS: {peak_mb():,.0f} MiB")


if __name__ == "__main__":
    main()
