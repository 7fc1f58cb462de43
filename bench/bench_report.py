"""Report rendering on a long history: time and page size (bound: under 10 MB).

Writes a history of ``--ops`` lines (invocations and completions of sends and
polls over 16 keys, 20 processes, with a partition band) plus a results object
naming 200 ops across it, then times ``write_report`` (history reading, the
plot and table data, HTML and JUnit), from the JSONL and then from the Parquet
form of the same history. Prints the figures and the command.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from history import read_flat
from history.parquet import write_parquet
from reports import write_report


def write_history(path: Path, n_ops: int, seed: int = 1) -> list[int]:
    """A valid queue history of ``n_ops`` lines; returns indices of OK sends."""
    rng = random.Random(seed)
    next_offset = [0] * 16
    sends: list[int] = []
    fault_at = {n_ops // 6 * 2: "start-partition", n_ops // 3 * 2: "stop-partition"}
    t = 0
    with path.open("w") as f:

        def line(index: int, type_: str, process: int | str, f_: str, value: object) -> None:
            op = {"index": index, "time": t, "type": type_, "process": process, "f": f_}
            f.write(json.dumps({**op, "value": value}) + "\n")

        for i in range(0, n_ops, 2):
            p, k = rng.randrange(20), rng.randrange(16)
            t += rng.randrange(20_000, 200_000)
            if i in fault_at:
                line(i, "invoke", "nemesis", fault_at[i], None)
                line(i + 1, "info", "nemesis", fault_at[i], None)
                continue
            if rng.random() < 0.5:
                f_, inv, done = "send", [["send", k, i]], [["send", k, [next_offset[k], i]]]
                next_offset[k] += 1
                sends.append(i + 1)
            else:
                o = max(0, next_offset[k] - 3)
                f_, inv, done = "poll", [["poll"]], [["poll", {str(k): [[o, -1]]}]]
            line(i, "invoke", p, f_, inv)
            t += rng.randrange(100_000, 5_000_000)
            line(i + 1, "ok", p, f_, done)
    return sends


def timed_report(run: Path, results: dict) -> tuple[float, int]:
    t0 = time.perf_counter()
    written = write_report(run, results)
    return time.perf_counter() - t0, written.report.stat().st_size


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=1_000_000, help="history lines")
    a, _ = p.parse_known_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp)
        sends = write_history(run / "history.jsonl", a.ops)
        named = sends[:: max(1, len(sends) // 200)][:200]
        lost = [
            {
                "key": 0,
                "value": i - 1,
                "writer": {"index": i, "process": 0},
                "explanation": f"op {i} was lost",
            }
            for i in named
        ]
        results = {"valid": False, "anomalies": {"lost-write": lost}}
        from_jsonl, size = timed_report(run, results)
        write_parquet(read_flat(run / "history.jsonl"), str(run / "history.parquet"))
        from_parquet, _ = timed_report(run, results)
    print(
        f"report of a {a.ops}-line history: {from_jsonl:.1f} s from history.jsonl, "
        f"{from_parquet:.1f} s from history.parquet; report.html {size / 1e6:.1f} MB  "
        f"(command: .venv/bin/python bench/bench_report.py --ops {a.ops})"
    )


if __name__ == "__main__":
    main()
