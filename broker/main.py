"""Command line of the broker process, shared by ``python -m broker`` and
``jepka broker``: bad configuration exits 254 with one line, as Jepsen tools do."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from broker import bugs
from broker.config import BrokerConfig, ConfigError
from broker.server_properties import load_config

log = logging.getLogger(__name__)
BAD_INPUT = 254
CRASHED = 255


class Server(Protocol):
    """A broker or a controller-only node: what ``serve`` runs."""

    @property
    def listen(self) -> str:
        """HOST:PORT it serves on once started (a controller: its controller listener)."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


async def serve(server: Server, config: BrokerConfig) -> None:
    """Starts ``server``, prints the ready line launchers wait for, and stops it
    cleanly on SIGTERM or SIGINT."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    await server.start()
    ready = f"jepka broker ready node_id={config.node_id} listen={server.listen}"
    log.info(ready)
    print(ready, flush=True)
    await stopping.wait()
    log.info("shutting down")
    await server.stop()
    log.info("stopped")


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
        help="controller quorum voters (the controllers' controller listeners); without it "
        "a single node",
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
    from broker.controller_server import ControllerServer

    async def main() -> None:
        server: Server
        try:
            server = Broker(config) if config.is_broker else ControllerServer(config)
        except ValueError as e:  # unreadable metadata in the data dir
            raise ConfigError(str(e)) from None
        except OSError as e:  # an unusable data dir (permissions, not a directory...)
            raise ConfigError(f"--data-dir {config.data_dir}: {e}") from None
        await serve(server, config)

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
        log.exception("broker crashed")
        print(f"broker: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return CRASHED
