"""A single broker started with or without one switchable bug, killed by its PID."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from broker.launcher import BrokerProcess


@pytest.fixture
def start_buggy(tmp_path: Path) -> Iterator[Callable[[list[str]], BrokerProcess]]:
    started: list[BrokerProcess] = []

    def start(bugs: list[str]) -> BrokerProcess:
        broker = BrokerProcess(tmp_path / f"node{len(started)}", bugs=bugs)
        started.append(broker)
        return broker.start()

    yield start
    for broker in started:
        broker.kill()
