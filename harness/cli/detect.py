"""jepka detect: the detection table, on seeds drawn at random.

Runs every invocation of a detection file (default suites/detect.yml: each
bug mode under the standard fault mix, and the correct broker on every
workload) --rounds times, round by round, each run on a seed drawn when it
starts; appends one JSON line per run to --results, then prints the table
of everything in that file: per bug mode how often its anomaly was found,
the kinds seen and the median time to the first anomaly; per workload the
correct broker's false alarms. --table only prints it; --since and --until
count only the runs made in a window of time (such as after a fix, or
before a change of the fault mix). Exits 1 when a correct-broker
run in this call was invalid, else 0.
"""

from __future__ import annotations

import argparse
import functools
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.cli import ExitCode, UsageError, describe


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "detect",
        help="how often each bug mode is found, and false alarms, on random seeds",
        description=describe(__doc__),
    )
    p.add_argument("--suite", type=Path, default=Path("suites/detect.yml"), metavar="FILE")
    p.add_argument(
        "--results",
        type=Path,
        default=Path("bench/detection.jsonl"),
        metavar="FILE",
        help="results file runs append to (default: bench/detection.jsonl)",
    )
    p.add_argument("--rounds", type=int, default=1, metavar="N", help="runs per invocation")
    p.add_argument("--only", metavar="A,B", help="invocations by name (bug modes, correct-queue)")
    p.add_argument("--seed", type=int, help="one fixed seed instead of random ones")
    p.add_argument("--max-minutes", type=float, help="start no run after this long")
    p.add_argument("--store", help="run directory root (default: store)")
    p.add_argument("--time-limit", type=float, help="seconds of workload, over the file's")
    p.add_argument("--table", action="store_true", help="only print the table of --results")
    p.add_argument(
        "--since",
        metavar="TIME",
        help="count only runs made at or after TIME (UTC, e.g. 2026-11-26T09:30), "
        "such as those after a fix",
    )
    p.add_argument(
        "--until",
        metavar="TIME",
        help="count only runs made before TIME (UTC), such as those before a change",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from harness.cli.test import run_apart
    from harness.detect import (
        BUG_HEADER,
        CORRECT_HEADER,
        crashes,
        load,
        markdown,
        outcome,
        read_results,
        run_rounds,
        select,
        table,
        utc,
    )
    from harness.spec import SpecError

    if args.rounds < 1:
        raise UsageError(f"--rounds must be at least 1, got {args.rounds}")
    since, until = _time("--since", args.since), _time("--until", args.until)
    if since is not None and until is not None and since >= until:
        raise UsageError(f"--since {args.since} is not before --until {args.until}")
    alarms = 0
    try:
        if not args.table:
            invocations = load(args.suite)
            if args.only:
                invocations = select(invocations, args.only.split(","))
            overrides = {"store": args.store, "time_limit": args.time_limit}
            deadline = time.monotonic() + args.max_minutes * 60 if args.max_minutes else None
            for line in run_rounds(
                invocations,
                args.rounds,
                args.results,
                seed=args.seed,
                overrides=overrides,
                deadline=deadline,
                run_one=functools.partial(run_apart, shown=False),
            ):
                alarms += line.get("detected") is None and line["valid"] is False
                print(
                    f"detect {line['name']} seed {line['seed']}: {outcome(line)} "
                    f"({', '.join(line['kinds']) or 'no anomaly'}; {line['seconds']:.0f} s)",
                    flush=True,
                )
        changes = {"time_limit": args.time_limit}
        judged = {i.config(changes): i.anomalies for i in load(args.suite)}
        lines = [
            x
            for x in read_results(args.results)
            if (since is None or utc(x["at"]) >= since) and (until is None or utc(x["at"]) < until)
        ]
        bug_rows, correct_rows = table(lines, judged)
        crashed_runs = crashes(lines, judged)
    except SpecError as e:
        raise UsageError(str(e)) from None
    window = "".join(
        f", runs {word} {when:%Y-%m-%dT%H:%M:%S}Z"
        for word, when in (("since", since), ("before", until))
        if when is not None
    )
    print(f"\nfrom {args.results}, the invocations of {args.suite}{window}\n")
    print(markdown(bug_rows, BUG_HEADER))
    print()
    print(markdown(correct_rows, CORRECT_HEADER))
    if crashed_runs:
        print(f"\n{crashed_runs} run(s) crashed without a verdict: see their lines in the file")
    return ExitCode.INVALID if alarms else ExitCode.VALID


def _time(option: str, text: str | None) -> datetime | None:
    """``--since`` or ``--until`` in UTC (a time without an offset is taken
    as UTC)."""
    from harness.detect import utc

    if text is None:
        return None
    try:
        return utc(text)
    except ValueError:
        raise UsageError(f"{option}: not a time: {text!r} (e.g. 2026-11-26T09:30)") from None
