"""The `jepka` command line: one dispatcher, one module per subcommand.

Each module listed in ``COMMAND_MODULES`` exposes ``register(subparsers)``, which
adds its parser and sets ``run`` (a callable taking the parsed namespace and
returning an exit code). A command line naming a subcommand imports that
module alone: the others import pandas, Spark's and Docker's clients, a
second and more before anything runs. The dispatcher owns what every subcommand shares:
Jepsen's exit codes, and turning errors into one line instead of a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import re
import sys
from collections.abc import Sequence
from enum import IntEnum
from pathlib import Path
from typing import NoReturn

COMMAND_MODULES: tuple[str, ...] = (
    "harness.cli.broker",
    "harness.cli.check",
    "harness.cli.cluster",
    "harness.cli.convert",
    "harness.cli.detect",
    "harness.cli.replay",
    "harness.cli.report",
    "harness.cli.serve",
    "harness.cli.shrink",
    "harness.cli.suite",
    "harness.cli.test",
)


class ExitCode(IntEnum):
    """Jepsen's exit codes."""

    VALID = 0
    INVALID = 1
    UNKNOWN = 2
    BAD_INPUT = 254
    CRASHED = 255


class UsageError(Exception):
    """Bad arguments or input: reported in one line, exit 254."""


def describe(doc: str | None) -> str:
    """A module docstring's first paragraph as a command's description: one
    line of plain text (help output shows no reStructuredText)."""
    first = (doc or "").strip().split("\n\n")[0]
    return re.sub(r"`+([^`]*)`+", r"\1", " ".join(first.split()))


def add_run_argument(parser: argparse.ArgumentParser) -> None:
    """The stored run a command works on, as ``run_dir``."""
    parser.add_argument(
        "run_dir",
        metavar="RUN",
        type=Path,
        help="run folder, e.g. store/latest or store/<test>/<time>",
    )


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on bad arguments; Jepsen's code for that is 254."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(ExitCode.BAD_INPUT, f"{self.prog}: error: {message}\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of ``command`` alone when it names one."""
    parser = _Parser(prog="jepka", description=describe(__doc__))
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="log what jepka does, and show what Java and Spark print as they start",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    subparsers.required = True
    named = [m for m in COMMAND_MODULES if m.rsplit(".", 1)[1] == command]
    for name in named or COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs one subcommand and returns its exit code; never lets a traceback out
    unless ``JEPKA_DEBUG`` is set."""
    words = sys.argv[1:] if argv is None else list(argv)
    command = next((w for w in words if not w.startswith("-")), None)
    args = build_parser(command).parse_args(words)
    level = "INFO" if args.verbose else os.environ.get("JEPKA_LOG_LEVEL", "WARNING")
    logging.basicConfig(level=level)
    if args.verbose:
        from checkers.spark.session import VERBOSE_ENV

        os.environ[VERBOSE_ENV] = "1"
    try:
        return int(args.run(args))
    except UsageError as e:
        print(f"jepka {args.command}: {e}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    except KeyboardInterrupt:
        print(f"jepka {args.command}: interrupted", file=sys.stderr)
        return ExitCode.UNKNOWN
    except Exception as e:  # the last resort: one line, Jepsen's "crashed" code
        if os.environ.get("JEPKA_DEBUG"):
            raise
        print(f"jepka {args.command}: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return ExitCode.CRASHED
