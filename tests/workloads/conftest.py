"""A reference broker subprocess per test, killed by PID at teardown."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.launcher import BrokerProcess


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    b = BrokerProcess(tmp_path / "data").start(60)
    try:
        yield b
    finally:
        b.kill()
