"""How much of a run's workload its faults took: from stored runs' histories.

For each group of run folders (a glob each), the mean share of the main
phase (0 to the run's time limit) during which a majority of the cluster's
nodes were killed or paused, during which any node was, and during which
no fault at all was in force. A fault counts from the completion of its
start to the completion of its stop, as the report's timeline draws it.
This is what a change of the fault mix changes, measured on the runs
themselves rather than on schedules, since role targets such as the
leaders resolve only against the live cluster. Prints the command and a
Markdown table.
"""

from __future__ import annotations

import argparse
import glob
import json
import statistics
import sys
from pathlib import Path

from harness.store import HISTORY, TEST_JSON
from nemesis.grudge import majority
from reports.pairs import load_pairs
from reports.timeline import fault_nodes

STEP_S = 0.5


def shares(run: Path) -> tuple[float, float, float]:
    """(majority down, any node down, no fault) as shares of the main phase."""
    config = json.loads((run / TEST_JSON).read_text())
    limit = float(config["spec"]["time_limit"])
    nodes = len(config["nodes"])
    _, faults, _ = load_pairs(run / HISTORY)
    spans = [(f.start, limit if f.end is None else f.end, f) for f in faults]
    steps = [i * STEP_S for i in range(int(limit / STEP_S))]
    big = some = quiet = 0
    for t in steps:
        now = [f for start, end, f in spans if start <= t < end]
        down = {n for f in now if f.kind in ("kill", "pause") for n in fault_nodes(f.value)[0]}
        big += len(down) >= majority(nodes)
        some += bool(down)
        quiet += not now
    return big / len(steps), some / len(steps), quiet / len(steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("groups", nargs="+", metavar="GLOB", help="run folders, e.g. 'store/A/*/*'")
    args = parser.parse_args()
    print("command: .venv/bin/python bench/fault_load.py " + " ".join(map(repr, args.groups)))
    print("\n| runs | folders | majority killed or paused | any node | no fault |")
    print("|---|---|---|---|---|")
    for pattern in args.groups:
        # a test's `latest` link names one of its runs again
        runs = [Path(p) for p in sorted(glob.glob(pattern)) if Path(p).name != "latest"]
        got = [shares(r) for r in runs if all((r / f).exists() for f in (TEST_JSON, HISTORY))]
        if not got:
            print(f"{pattern}: no run folders", file=sys.stderr)
            continue
        means = [statistics.mean(col) for col in zip(*got, strict=True)]
        print(f"| {len(got)} | `{pattern}` | " + " | ".join(f"{m:.0%}" for m in means) + " |")


if __name__ == "__main__":
    main()
