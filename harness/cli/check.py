"""``jepka check PATH``: judge a stored run or a history file with the Spark
checker, print the verdict, write ``results.json`` beside a stored run's
history, and exit with Jepsen's code (0 valid, 1 invalid, 2 unknown)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from harness.cli import ExitCode, UsageError, describe
from history import FORMATS, HistoryError

EXAMPLES_SHOWN = 3


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "check",
        help="check a history or a stored run for Kafka anomalies",
        description=describe(__doc__),
    )
    p.add_argument("path", help="history file, or a stored run directory (store/<test>/<time>/)")
    p.add_argument(
        "--format",
        choices=["auto", *FORMATS],
        default="auto",
        help="history format (default: detected from the content)",
    )
    p.add_argument("--json", action="store_true", help="print the result object as JSON")
    p.add_argument(
        "--no-ww-deps",
        dest="ww_deps",
        action="store_false",
        help="no ww (write order) edges: cycles then show pure information flow (wr) only",
    )
    p.add_argument(
        "--spark-master",
        default=None,
        metavar="URL",
        help="run the jobs on this Spark master (default: local[*])",
    )
    p.set_defaults(run=run)


def results_path(path: str) -> Path | None:
    """Where results.json goes: inside a run directory, or beside a history
    file that lives in one (a directory with test.json); nowhere otherwise."""
    p = Path(path)
    if p.is_dir():
        return p / "results.json"
    if (p.parent / "test.json").is_file():
        return p.parent / "results.json"
    return None


def exit_code(valid: Any) -> ExitCode:
    if valid is True:
        return ExitCode.VALID
    if valid is False:
        return ExitCode.INVALID
    return ExitCode.UNKNOWN


def run(args: argparse.Namespace) -> int:
    if not os.path.exists(args.path):
        raise UsageError(f"{args.path}: no such file or directory")
    from checkers.spark.session import start_in_background

    start_in_background(args.spark_master)  # the JVM starts while the checker is imported
    from checkers.analyze import check

    try:
        result = check(
            args.path, ww_deps=args.ww_deps, spark_master=args.spark_master, fmt=args.format
        )
    except HistoryError as e:
        raise UsageError(str(e)) from None
    out = results_path(args.path)
    if out is not None:
        tmp = out.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(result, indent=1) + "\n")
        tmp.replace(out)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print_summary(result, out)
    return exit_code(result["valid"])


def print_summary(result: dict[str, Any], out: Path | None) -> None:
    from checkers.result import anomaly_counts

    console = Console()
    stats = result["stats"]
    counts = anomaly_counts(result)
    verdict = {True: "[bold green]valid", False: "[bold red]INVALID"}.get(
        result["valid"], "[bold yellow]unknown"
    )
    console.print(f"{stats.get('ops', 0)} ops over {stats.get('keys', 0)} keys: {verdict}")
    if counts:
        table = Table("anomaly", "count", "verdict", "example")
        for kind, n in counts.items():
            why = result.get("allowed_why", {}).get(kind)
            examples = result["anomalies"].get(kind, [])[:1]
            table.add_row(
                kind,
                str(n),
                "[green]allowed" if why else "[red]fails",
                examples[0]["explanation"] if examples else "",
            )
        console.print(table)
        for kind, why in result.get("allowed_why", {}).items():
            console.print(f"[dim]{kind} allowed: {why}")
    lag = (stats.get("realtime_lag") or {}).get("worst")
    if lag:
        console.print(
            f"worst realtime lag: {lag['lag'] / 1e9:.3f} s (op {lag['op']['index']}, "
            f"key {lag['key']})"
        )
    console.print(f"checked in {result['timings'].get('total', 0):.1f} s")
    if out is not None:
        console.print(f"results: {out}", soft_wrap=True)  # a path stays copyable
