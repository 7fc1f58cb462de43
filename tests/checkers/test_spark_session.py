"""A Spark JVM that dies (the OOM killer picks the biggest process) is replaced on
the next check instead of failing every later check of a ``jepka suite``. Run in
a child process: the test kills its JVM, which the shared test session must not
lose."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCRIPT = textwrap.dedent(
    """
    import os, signal
    from pyspark import SparkContext
    from checkers.spark.session import start_in_background

    first = start_in_background().result()
    print("first", first.range(5).count())
    os.kill(SparkContext._gateway.proc.pid, signal.SIGKILL)
    SparkContext._gateway.proc.wait(30)
    second = start_in_background().result()
    print("second", second.range(7).count(), second is not first)
    second.stop()
    """
)


def test_a_dead_jvm_is_replaced_by_a_new_session() -> None:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=root, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["first 5", "second 7 True"], done.stdout
