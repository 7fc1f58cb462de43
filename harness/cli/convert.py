"""``jepka convert IN OUT``: a history from one format to another (jepka
JSONL, jepka Parquet, Jepsen EDN), checked on the way, so Jepsen users can
bring their histories and take jepka's to Elle."""

from __future__ import annotations

import argparse

from harness.cli import ExitCode, UsageError, describe
from history import FORMATS, HistoryError, convert


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "convert",
        help="convert a history between jsonl, parquet and jepsen-edn",
        description=describe(__doc__),
    )
    p.add_argument("input", help="history file to read")
    p.add_argument("output", help="file to write (format from its extension unless --to)")
    p.add_argument(
        "--from",
        dest="from_format",
        choices=["auto", *FORMATS],
        default="auto",
        help="input format (default: detected from the content)",
    )
    p.add_argument(
        "--to",
        dest="to_format",
        choices=FORMATS,
        default=None,
        help="output format (default: from the extension .jsonl, .parquet or .edn)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        n = convert(args.input, args.output, args.from_format, args.to_format)
    except HistoryError as e:
        raise UsageError(str(e)) from None
    print(f"wrote {n} ops to {args.output}")
    return ExitCode.VALID
