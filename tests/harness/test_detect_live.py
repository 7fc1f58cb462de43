"""`jepka detect` live, as users run it (its own process): one bug
invocation of ``suites/detect.yml`` runs with the file's standard fault mix,
cluster and timeouts on a fixed seed, appends its line to the results file
and prints the table, and the line says what the run's own results say.
Whether the run finds its bug depends on timing under faults, so that is
measured on random seeds (docs/detection.md) and checked deterministically
on the recorded detection runs of the corpus (``tests/corpus.py``). Its own
process also keeps a transactional client stuck past its timeout in
librdkafka's send_offsets_to_transaction (librdkafka issue 5456) out of
pytest's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.detect import read_results
from harness.reproduce import anomaly_kinds
from tests.harness.test_bug_detection import END_TO_END
from tests.nemesis.probes import netns_available

pytestmark = END_TO_END

BUG = "lso-off-by-one"
SEED = 1
TIME_LIMIT_S = 10


def test_a_detection_run_records_what_its_run_found(tmp_path: Path) -> None:
    reason = netns_available()
    if reason:
        pytest.skip(reason)
    results = tmp_path / "detection.jsonl"
    args = ["detect", "--only", BUG, "--seed", str(SEED), "--time-limit", str(TIME_LIMIT_S)]
    args += ["--store", str(tmp_path / "store"), "--results", str(results)]
    done = subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]  # 1 only for a correct broker's alarm
    (line,) = read_results(results)
    assert (line["bug"], line["workload"], line["seed"]) == (BUG, "txn", SEED)
    run = Path(line["run"])
    test = json.loads((run / "test.json").read_text())
    spec = test["spec"]
    assert (spec["nemesis"], spec["nodes"], spec["time_limit"]) == (["standard"], 5, TIME_LIMIT_S)
    assert test["broker_settings"]["broker.session.timeout.ms"] == "3000"  # the file's timeouts
    outcome = json.loads((run / "results.json").read_text())
    assert (line["valid"], line["kinds"]) == (outcome["valid"], sorted(anomaly_kinds(outcome)))
    assert line["anomalies"] == ["G1a", "precommitted-read"]  # the file's kinds for it
    assert f"| {BUG} | txn |" in done.stdout
