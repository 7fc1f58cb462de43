"""The client-thread checks of tests/conftest.py, run on a test that leaks a producer."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
SUMMARY = re.compile(r"\d+ (passed|failed|error).* in [\d.]+s")

# test_closes runs first: once test_leaks has leaked its producer, that
# producer may start broker threads of its own at any time, which a later
# test's check would count as that test's.
LEAKING = """
from confluent_kafka import Producer

KEPT = []


def test_closes(kafka_clients) -> None:
    conf = {{"bootstrap.servers": "127.0.0.1:{port}", "log_level": 0}}
    kafka_clients.producer(conf).produce("t", b"dropped at close")
    kafka_clients.admin(conf)


def test_leaks() -> None:
    producer = Producer({{"bootstrap.servers": "127.0.0.1:{port}", "log_level": 0}})
    producer.produce("t", b"never delivered")
    KEPT.append(producer)
"""


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.timeout(60)  # a run that hangs at exit fails here, not after 15 min
def test_a_leaked_producer_fails_its_test_and_the_run_exits_at_once(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tests.conftest"]\n')
    (tmp_path / "test_leak.py").write_text(LEAKING.format(port=closed_port()))
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(tmp_path)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    lines, summary_at = [], None
    for line in proc.stdout:
        lines.append(line)
        if SUMMARY.search(line):
            summary_at = time.monotonic()
    code = proc.wait(30)
    exit_after_s = time.monotonic() - summary_at if summary_at else None
    out = "".join(lines)
    assert code == pytest.ExitCode.TESTS_FAILED, out
    # at once: a run waiting on the leaked clients would not end before proc.wait gives up;
    # the bound leaves room for a busy machine
    assert exit_after_s is not None and exit_after_s < 15, (exit_after_s, out)
    assert "2 passed, 1 error" in out, out  # test_leaks passes, then fails its teardown
    assert re.search(r"test_leak.py::test_leaks left 3 Kafka client threads \(.*rdk:main", out)
    assert "test_closes left" not in out
    # the leaked producer may have started or ended a broker thread since its test's teardown
    assert re.search(
        r"FAILED: \d+ Kafka client threads? \(.*rdk:main.*\) still alive at the end", out
    ), out
