"""`jepka check --spark-master spark://...` on a real standalone Spark
cluster (a master and two workers started from pyspark's own spark-class):
the same result as ``local[*]``, with jepka's code shipped to the executors
rather than imported from an installation they share with the driver."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest
from pyspark.sql import SparkSession

from checkers.analyze import check
from checkers.result import anomaly_counts
from checkers.synth import generate
from history.writers import write_ops
from tests.eventually import eventually

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.integration]

SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"
ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A standalone master and two one-core workers on 127.0.0.1; yields its URL."""
    work = tmp_path_factory.mktemp("spark")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    port, ui = free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    argv = [str(SPARK_CLASS), "org.apache.spark.deploy.master.Master"]
    argv += ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)]
    procs = [subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        for i in range(2):
            worker = [str(SPARK_CLASS), "org.apache.spark.deploy.worker.Worker", url]
            worker += ["--cores", "1", "--memory", "1g", "--webui-port", str(free_port())]
            worker += ["--work-dir", str(work / f"w{i}")]
            procs.append(
                subprocess.Popen(
                    worker, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                )
            )

        def workers_alive() -> bool:
            with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json", timeout=2) as answer:
                return json.load(answer).get("aliveworkers") == 2

        eventually(workers_alive, 90, interval=1, retry_on=(OSError,), what="two Spark workers")
        yield url
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(30)


CHECK_ON_CLUSTER = textwrap.dedent(
    """
    import json, sys
    from checkers.analyze import check
    from checkers.result import anomaly_counts
    from checkers.spark.session import get_session

    result = check(sys.argv[1], spark_master=sys.argv[2])
    spark = get_session(sys.argv[2])

    def loaded(_):  # every checker module imported on an executor: which of jepka's files?
        import importlib, pkgutil, sys
        import checkers
        for info in pkgutil.walk_packages(checkers.__path__, "checkers."):
            importlib.import_module(info.name)
        tops = {"broker", "history", "generator", "control", "workloads", "nemesis",
                "checkers", "reports", "harness"}
        return [getattr(m, "__file__", "") or "" for name, m in list(sys.modules.items())
                if name.split(".")[0] in tops]

    files = sorted(set(spark.sparkContext.parallelize(range(8), 8).flatMap(loaded).collect()))
    print(json.dumps([result["valid"], anomaly_counts(result), files]))
    spark.stop()
    """
)


def test_a_check_on_a_spark_cluster_gives_the_local_result(
    spark_cluster: str, spark: SparkSession, tmp_path: Path
) -> None:
    history = tmp_path / "history.jsonl"
    write_ops(iter(generate(7, 20_000, fault="lost-write")), str(history), "jsonl")
    local = check(str(history), spark=spark)
    done = subprocess.run(
        [sys.executable, "-c", CHECK_ON_CLUSTER, str(history), spark_cluster],
        cwd=tmp_path,  # not the repository: the executors find jepka only in what is shipped
        env={**os.environ, "PYTHONPATH": ""},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    valid, counts, files = json.loads(done.stdout.splitlines()[-1])
    assert local["valid"] is False and valid is False
    assert counts == anomaly_counts(local) and counts
    # the executors ran the checks on jepka's shipped code, none of it from the
    # installation they happen to share with the driver here
    assert files and all("jepka.zip" in f for f in files), files
