"""A Spark JVM that dies (the OOM killer picks the biggest process), or a context
Spark stops itself, is replaced on the next check instead of failing every later
check of a ``jepka suite``; a run's JVM yields the CPU to the run; and a check
frees the JVM objects it made. The tests that end a JVM run in child processes:
the shared test session must not lose its own."""

from __future__ import annotations

import gc
import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from py4j.java_gateway import JavaObject
from pyspark.sql import SparkSession

from checkers.analyze import check, warm_up
from checkers.spark.session import (
    STARTUP_NOISE,
    YIELDING_NICE,
    filter_jvm_stderr,
)
from tests.autogroups import AUTOGROUPS, autogroup

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import os, signal
    from pyspark import SparkContext
    from checkers.spark.session import start_in_background, yielding
    from tests.autogroups import autogroup, nice

    warmed = []

    def warm(session):
        warmed.append(session)
        try:  # as a check retrying on a new session would
            start_in_background()
        except RuntimeError:
            warmed.append("refused")

    first = start_in_background(then=warm).result()
    same = start_in_background(then=warmed.append).result()  # built already: no warm-up
    print("first", first.range(5).count(), same is first, warmed[1:])
    jvm = SparkContext._gateway.proc.pid
    print("in our session", os.getsid(jvm) == os.getsid(0))
    with yielding():  # a JVM in our session is not ours to yield: our share stays
        print("sharing", repr(autogroup("self")))
    os.kill(jvm, signal.SIGKILL)
    SparkContext._gateway.proc.wait(30)
    with yielding():  # as a run starts it: a new JVM starts yielding
        second = start_in_background(then=warmed.append).result()
        print("second", second.range(7).count(), second is not first, warmed[-1] is second)
        jvm = SparkContext._gateway.proc.pid
        print("yielding", os.getsid(jvm) == jvm, nice(jvm), repr(autogroup("self")))
    print("after", nice(jvm), repr(autogroup("self")))
    second.stop()
    """
)


def test_a_dead_jvm_is_replaced_by_a_new_session() -> None:
    ours = autogroup("self")  # the child's too: it shares this process's session
    done = run_child(SCRIPT)
    assert done.stdout.split("\n")[:6] == [
        "first 5 True ['refused']",
        "in our session True",
        f"sharing {ours!r}",
        "second 7 True True",
        f"yielding True {YIELDING_NICE if AUTOGROUPS else 'none'} {ours!r}",
        f"after {'0' if AUTOGROUPS else 'none'} {ours!r}",
    ], done.stdout
    assert not STARTUP_NOISE.search(done.stderr), done.stderr  # both JVMs started quietly


def test_the_warm_up_checks_a_valid_history(spark: SparkSession) -> None:
    assert warm_up(spark)["valid"] is True


def test_a_check_counts_only_its_own_spark_jobs(spark: SparkSession) -> None:
    first, second = (warm_up(spark)["timings"]["spark_jobs"] for _ in range(2))
    assert first == second and first["cases"] >= 1, (first, second)


def test_the_jvms_stderr_passes_on_all_but_its_start_up_noise(
    capsys: pytest.CaptureFixture[str],
) -> None:
    jvm = io.BytesIO(
        b"WARNING: Using incubator modules: jdk.incubator.vector\n"
        b"Using Spark's default log4j profile: org/apache/spark/log4j2-defaults.properties\n"
        b"26/11/26 03:37:19 WARN NativeCodeLoader: Unable to load native-hadoop library\n"
        b"26/11/26 03:40:00 ERROR Executor: Exception in task 0.0\n"
    )
    filter_jvm_stderr(jvm)
    assert capsys.readouterr().err == "26/11/26 03:40:00 ERROR Executor: Exception in task 0.0\n"


# Spark stops its context from one of its own threads (as when an out-of-memory
# error kills its listener bus) while the case finders run: the check must
# start a new session, check again, and give the verdict of an undisturbed check.
STOPPED_MID_CHECK = textwrap.dedent(
    """
    import json
    import checkers.analyze as analyze
    from checkers.spark.session import get_session

    undisturbed = analyze.check("examples/anomalies.jsonl")
    first = get_session()
    real = analyze.analyse_keys

    def stopping(*args, **kwargs):
        if analyze.is_alive(first):
            first.sparkContext._jsc.sc().stop()
        return real(*args, **kwargs)

    analyze.analyse_keys = stopping
    again = analyze.check("examples/anomalies.jsonl")
    print(json.dumps([undisturbed["valid"], sorted(undisturbed["anomalies"])]))
    print(json.dumps([again["valid"], sorted(again["anomalies"])]))
    print(analyze.is_alive(first), analyze.is_alive(get_session()))
    get_session().stop()
    """
)


def test_a_context_stopped_mid_check_is_checked_again_on_a_new_session() -> None:
    done = run_child(STOPPED_MID_CHECK)
    undisturbed, again, alive = done.stdout.split("\n")[:3]
    assert json.loads(undisturbed)[0] is False, undisturbed
    assert again == undisturbed
    assert alive == "False True"
    assert "checking again" in done.stderr


def test_a_check_leaves_no_jvm_proxies_to_the_cycle_collector(spark: SparkSession) -> None:
    """Proxies left in cycles would keep the check's datasets and plans in the
    JVM until Python's collector happens to run."""
    gc.collect()
    gc.disable()
    try:
        result = check(str(ROOT / "examples" / "anomalies.jsonl"), spark=spark)
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        left = sum(isinstance(o, JavaObject) for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert result["valid"] is False
    assert left == 0


def run_child(script: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done
