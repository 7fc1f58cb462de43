"""A reference broker subprocess per test, killed by PID at teardown."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.workloads.broker_process import BrokerProcess, start_broker


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    b = start_broker(tmp_path / "data")
    try:
        yield b
    finally:
        b.kill()
        if b.proc.stdout is not None:
            b.proc.stdout.close()
