"""Fixtures for broker tests: brokers as subprocesses, always killed by PID, and
the fsync ledger the in-process logs write to."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from broker.launcher import BrokerProcess
from broker.log.ledger import FsyncLedger


@pytest.fixture
def start_broker(tmp_path: Path) -> Iterator[Callable[..., BrokerProcess]]:
    started: list[BrokerProcess] = []

    def start(*settings: str, name: str = "node1") -> BrokerProcess:
        broker = BrokerProcess(tmp_path / name, list(settings))
        started.append(broker)
        return broker.start()

    yield start
    for broker in started:
        broker.kill()


@pytest.fixture
def broker(start_broker: Callable[..., BrokerProcess]) -> BrokerProcess:
    return start_broker()


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for a module whose tests leave it running and keep to
    topics of their own (`topic`)."""
    broker = BrokerProcess(tmp_path_factory.mktemp("shared") / "node1", []).start()
    yield broker
    broker.kill()


@pytest.fixture
def topic(request: pytest.FixtureRequest) -> str:
    """A topic name of this test's own, so tests can share a broker."""
    return re.sub(r"[^A-Za-z0-9._-]", "-", request.node.name)[:200]


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[FsyncLedger]:
    """The fsync ledger of a data directory in ``tmp_path``."""
    ledger = FsyncLedger(tmp_path)
    yield ledger
    ledger.close()
