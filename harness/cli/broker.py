"""``jepka broker``: run one node of the built-in reference broker."""

from __future__ import annotations

import argparse

from broker.config import ConfigError
from broker.main import add_arguments, config_from_args, run
from harness.cli import UsageError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "broker",
        help="run a node of the reference Kafka-compatible broker",
        description="Runs one broker node until SIGTERM; prints a 'ready' line once listening.",
    )
    add_arguments(parser)
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    try:
        return run(config_from_args(args))
    except ConfigError as e:
        raise UsageError(str(e)) from None
