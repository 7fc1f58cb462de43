"""A slice of the detection table, live on a fixed seed: `jepka detect` runs
one bug invocation of ``suites/detect.yml`` (its standard fault mix, 5 nodes,
its timeouts) on a fixed seed with 30 s of workload, appends its line, and
the bug is found with one of the kinds the file names. The table itself is
measured on random seeds (docs/detection.md); this keeps its machinery and
settings working in ``make test``. It runs as its own process, as users run
it: a transactional client stuck past its timeout in librdkafka's
send_offsets_to_transaction (librdkafka issue 5456) would outlive the run
inside pytest's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.detect import read_results
from tests.harness.test_bug_detection import END_TO_END
from tests.nemesis.probes import netns_available

pytestmark = END_TO_END

BUG = "lso-off-by-one"  # found within a second of workload in every recorded run
SEED = 1
TIME_LIMIT_S = 30


def test_a_bug_invocation_of_the_detection_file_finds_its_bug(tmp_path: Path) -> None:
    reason = netns_available()
    if reason:
        pytest.skip(reason)
    results = tmp_path / "detection.jsonl"
    args = ["detect", "--only", BUG, "--seed", str(SEED), "--time-limit", str(TIME_LIMIT_S)]
    args += ["--store", str(tmp_path / "store"), "--results", str(results)]
    done = subprocess.run([sys.executable, "-m", "harness", *args], timeout=900, check=False)
    assert done.returncode == 0  # 1 only for a false alarm of the correct broker
    (line,) = read_results(results)
    assert (line["bug"], line["seed"], line["valid"]) == (BUG, SEED, False)
    assert line["detected"], line["kinds"]
    assert set(line["kinds"]) & set(line["anomalies"])
