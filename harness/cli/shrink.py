"""jepka shrink RUN: the smallest fault schedule, time limit, key count and
client count that still reproduce a stored run's anomaly.

Delta debugging over the run's faults (see docs/reproduce.md): faults are
dropped, shortened and the test made smaller for as long as the anomaly
comes back in at least --need of --tries runs, and the answer is run
again before it is kept (--no-confirm skips that). The best schedule so far is
kept in RUN/shrink/minimal.yml and RUN/shrink/summary.md, also when
interrupted (Ctrl-C). Exits 1 when the anomaly was reproduced (the
minimal schedule shows it), 0 when it never came back, 2 when interrupted
before anything reproduced, 254 on bad input.
"""

from __future__ import annotations

import argparse
from typing import Any

from harness.cli import ExitCode, UsageError, add_run_argument, describe


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "shrink",
        help="shrink a stored invalid run to a minimal reproduction",
        description=describe(__doc__),
    )
    add_run_argument(p)
    p.add_argument(
        "--tries", type=int, default=3, metavar="N", help="runs per candidate, at most (default: 3)"
    )
    p.add_argument(
        "--need",
        type=int,
        default=2,
        metavar="K",
        help="runs of a candidate that must show the anomaly (default: 2)",
    )
    p.add_argument(
        "--no-confirm",
        dest="confirm",
        action="store_false",
        help="do not run the answer again before keeping it",
    )
    p.add_argument(
        "--anomaly",
        action="append",
        metavar="KIND",
        help="the anomaly kind to keep (repeatable; default: every kind the run found)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from harness.cli.test import run_apart
    from harness.cluster import ClusterError
    from harness.reproduce import StoredRun
    from harness.shrink import Interrupted, Shrinker, Trial, shrink
    from harness.spec import SpecError
    from nemesis.base import NemesisError

    if not 1 <= args.need <= args.tries:
        raise UsageError(f"--need must be between 1 and --tries ({args.tries}), got {args.need}")
    try:
        stored = StoredRun.load(args.run_dir)
    except SpecError as e:
        raise UsageError(str(e)) from None
    kinds = set(args.anomaly or stored.kinds)
    if stored.results is None and not kinds:
        raise UsageError(f"{stored.path} has no results.json: run `jepka check` on it first")
    if not kinds:
        raise UsageError(f"{stored.path} found no anomaly to shrink for; name one with --anomaly")
    console = Console(highlight=False)

    def report(trial: Trial, better: bool) -> None:
        mark = "[green]reproduces[/]" if better else "[dim]does not[/]"
        step = "confirm" if trial.confirming else "shrink"
        console.print(
            f"[bold]{step}[/] {trial.candidate.describe()}: {mark} "
            f"({trial.reproduced} of {len(trial.runs)} runs)"
        )

    try:
        shrinker = Shrinker(stored, kinds, args.tries, args.need, run_apart, report)
        start = shrinker.start()
    except OSError as e:
        raise UsageError(f"{stored.path / 'shrink'}: cannot write: {e.strerror}") from None
    console.print(
        f"[bold]shrinking[/] {stored.path} for {', '.join(sorted(kinds))}: "
        f"{len(stored.plan.faults)} fault(s); a candidate reproduces when "
        f"{args.need} of {args.tries} runs show it"
    )
    interrupted = False
    try:
        confirms = shrinker.confirms if args.confirm else None
        shrink(start, shrinker.reproduces, shrinker.shown_at(), confirms)
    except (Interrupted, KeyboardInterrupt):
        interrupted = True
    except (SpecError, ClusterError, NemesisError) as e:
        raise UsageError(str(e)) from None
    console.print("\n".join(shrinker.summary()), markup=False)
    if interrupted:
        console.print("interrupted: the best schedule so far is kept")
    console.print(f"written: {shrinker.directory / 'summary.md'}")
    if shrinker.best is not None:
        return ExitCode.INVALID
    return ExitCode.UNKNOWN if interrupted else ExitCode.VALID
