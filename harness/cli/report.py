"""``jepka report RUN``: re-renders a stored run's ``report.html`` and ``junit.xml``.

Exits with the run's verdict (Jepsen's codes: 0 valid, 1 invalid, 2 unknown),
like ``jepka check``, so scripts can chain on it; 254 if the run cannot be read.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from harness.cli import ExitCode, UsageError, add_run_argument, describe


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "report",
        help="re-render a stored run's report.html and junit.xml",
        description=describe(__doc__),
    )
    add_run_argument(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from reports import RunError, write_report

    try:
        written = write_report(args.run_dir)
    except RunError as e:
        raise UsageError(str(e)) from e
    valid = json.loads(written.results.read_text()).get("valid")
    print(f"{written.report}\n{written.junit}")
    return verdict_code(valid)


def verdict_code(valid: Any) -> int:
    if valid is True:
        return ExitCode.VALID
    if valid is False:
        return ExitCode.INVALID
    return ExitCode.UNKNOWN
