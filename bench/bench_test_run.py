"""How soon ``jepka test`` gives its verdict after the workload ends.

Runs ``jepka test`` (by default the demo's ``--workload txn --nemesis
partition``, 60 s of workload) in a fresh process on the local cluster and
splits the time after the workload's last main-phase op into: healing and the
final reads (until the last final op completes), then cluster teardown, the
Parquet history, the Spark check and the report (until the verdict is
printed). The workload's start is when the runner reports ``running`` (its
phase lines, printed about four times a second), so figures are good to a
quarter of a second. Needs root for the network namespaces.

    .venv/bin/python bench/bench_test_run.py [--time-limit 60] [--seed 1] [-- FLAGS]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _stamped_lines(stream, out: list[tuple[float, str]]) -> None:  # type: ignore[no-untyped-def]
    for line in stream:
        out.append((time.monotonic(), line.rstrip("\n")))


def run(time_limit: float, seed: int, extra: list[str]) -> dict[str, object]:
    store = tempfile.mkdtemp(prefix="jepka-bench-run-")
    cmd = [
        str(ROOT / ".venv" / "bin" / "jepka"),
        "test",
        "--workload",
        "txn",
        "--nemesis",
        "partition",
        "--time-limit",
        f"{time_limit:g}",
        "--seed",
        str(seed),
        *extra,
        "--store",  # last: left out of the command shown
        store,
    ]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[tuple[float, str]] = []
    readers = [
        threading.Thread(target=_stamped_lines, args=(s, lines), daemon=True)
        for s in (proc.stdout, proc.stderr)
    ]
    for r in readers:
        r.start()
    code = proc.wait()
    for r in readers:
        r.join()

    def first(prefix: str) -> float:
        found = [t for t, line in lines if line.startswith(prefix)]
        if not found:
            sys.exit(f"no line starting {prefix!r} in the output of {' '.join(cmd)}")
        return min(found)

    running, verdict = first("jepka test: running"), first("valid: ")
    run_dir = Path(next(line[5:] for _, line in lines if line.startswith("run: ")).strip())
    ops = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    main = [o["time"] for o in ops if o["process"] != "nemesis" and not o.get("final")]
    final = [o["time"] for o in ops if o.get("final")]
    workload_end = running + max(main) / 1e9
    final_end = running + max(final) / 1e9 if final else workload_end
    results = json.loads((run_dir / "results.json").read_text())
    shutil.rmtree(store, ignore_errors=True)
    return {
        "command": "jepka " + " ".join(cmd[1:-2]),
        "exit": code,
        "valid": results.get("valid"),
        "ops": len(ops),
        "start_to_running_s": round(running - t0, 1),
        "workload_s": round(workload_end - running, 1),
        "verdict_after_workload_s": round(verdict - workload_end, 1),
        "heal_and_final_reads_s": round(final_end - workload_end, 1),
        "teardown_check_report_s": round(verdict - final_end, 1),
        "check_s": results.get("timings", {}).get("total"),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--time-limit", type=float, default=60.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("extra", nargs="*", help="more `jepka test` flags (after --)")
    args = p.parse_args()
    print(f"command: .venv/bin/python bench/bench_test_run.py {' '.join(sys.argv[1:])}")
    print(json.dumps(run(args.time_limit, args.seed, args.extra)), flush=True)


if __name__ == "__main__":
    main()
