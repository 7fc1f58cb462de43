"""Command line of the broker process, shared by ``python -m broker`` and
``jepka broker``: bad configuration exits 254 with one line, as Jepsen tools do."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from broker import bugs
from broker.config import BrokerConfig, ConfigError
from broker.server_properties import load_config

BAD_INPUT = 254
CRASHED = 255


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--node-id", type=int, help="this broker's id (default: node.id)")
    parser.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help="address to listen on, port 0 for any (default: the broker listener of listeners)",
    )
    parser.add_argument(
        "--data-dir", type=Path, help="directory for logs and state (default: log.dirs)"
    )
    parser.add_argument(
        "--config",
        type=Path,
        help="a properties file: the broker's own settings, or Kafka's KRaft server.properties",
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="override one config key"
    )
    parser.add_argument(
        "--bug",
        action="append",
        default=[],
        metavar="NAME",
        help="switch on a historical bug (repeatable; see broker/bugs.py)",
    )
    parser.add_argument(
        "--voters",
        metavar="ID@HOST:PORT,...",
        help="controller quorum voters (combined mode); without it a single node",
    )


def config_from_args(args: argparse.Namespace) -> BrokerConfig:
    """Validates arguments and prepares the data dir; raises ``ConfigError``."""
    overrides = list(args.set)
    if args.voters is not None:
        overrides.append(f"controller.quorum.voters={args.voters}")
    config = load_config(args.node_id, args.listen, args.data_dir, args.config, overrides)
    bugs.enable(args.bug)
    try:
        config.data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"--data-dir {config.data_dir}: {e}") from None
    return config


def run(config: BrokerConfig) -> int:
    """Runs the broker until SIGTERM; logs go to ``<data-dir>/broker.log``."""
    handler = logging.FileHandler(config.data_dir / "broker.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    # kio registers hypothesis strategies for its types whenever hypothesis can be
    # imported (a development install). A broker draws none; the import would cost
    # 0.1 s a start and write `.hypothesis/` into the node's directory.
    sys.modules.setdefault("hypothesis", None)
    from broker.broker import Broker

    async def main() -> None:
        try:
            broker = Broker(config)
        except ValueError as e:  # unreadable metadata in the data dir
            raise ConfigError(str(e)) from None
        except OSError as e:  # an unusable data dir (permissions, not a directory...)
            raise ConfigError(f"--data-dir {config.data_dir}: {e}") from None
        await broker.run_until_stopped()

    asyncio.run(main())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m broker", description="jepka's reference Kafka broker"
    )
    add_arguments(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return BAD_INPUT if e.code else 0
    try:
        return run(config_from_args(args))
    except ConfigError as e:
        print(f"broker: {e}", file=sys.stderr)
        return BAD_INPUT
    except Exception as e:
        logging.getLogger(__name__).exception("broker crashed")
        print(f"broker: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return CRASHED
