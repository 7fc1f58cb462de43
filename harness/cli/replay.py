"""jepka replay RUN: run a stored run again, with the same ops and the same
faults at the same moments, and count how often its anomalies come back.

The ops come from the run's seed; the faults from its faults.yml, with
targets drawn at random pinned to the nodes they hit and roles (the
controller, a partition's leader) asked afresh of each new cluster. Each
replay is a run of its own in the store whose report links back to RUN.
Exits 0 when every replay is valid, 1 when any is invalid, 2 otherwise.
"""

from __future__ import annotations

import argparse
from typing import Any

from harness.cli import ExitCode, UsageError, add_run_argument, describe


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "replay",
        help="run a stored run again and count how often its anomalies come back",
        description=describe(__doc__),
    )
    add_run_argument(p)
    p.add_argument("--times", type=int, default=1, metavar="N", help="replays (default: 1)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from harness.cli.test import run_apart
    from harness.cluster import ClusterError
    from harness.reproduce import StoredRun, replay
    from harness.spec import SpecError
    from nemesis.base import NemesisError

    if args.times < 1:
        raise UsageError(f"--times must be at least 1, got {args.times}")
    try:
        stored = StoredRun.load(args.run_dir)
        print(
            f"replaying {stored.path}: {len(stored.plan.faults)} fault(s), anomalies: "
            f"{', '.join(sorted(stored.kinds)) or 'none'}"
        )
        done = replay(stored, args.times, run_apart)
    except (SpecError, ClusterError, NemesisError) as e:
        raise UsageError(str(e)) from None
    print(f"schedule: {done.schedule}")
    print("\n".join(done.summary()))
    if done.interrupted:
        print("interrupted: the replay cut short does not count")
    verdicts = [valid for _, valid, _ in done.runs]
    if not verdicts:
        return ExitCode.UNKNOWN
    if False in verdicts:
        return ExitCode.INVALID
    return ExitCode.VALID if all(v is True for v in verdicts) else ExitCode.UNKNOWN
