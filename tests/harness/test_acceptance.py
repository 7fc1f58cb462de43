"""The acceptance matrix (``suites/acceptance.yml``): on the correct reference
broker every workload under no fault, kill, pause, partition and their mix
ends valid — each case one short ``jepka test`` run through the suite runner,
so CI and ``jepka suite suites/acceptance.yml`` run the same. A faulted case
must also show a fault that bit while the workload ran: a valid verdict over a
run the nemesis never touched would prove nothing.

``make test`` runs a slice, :data:`SLICE`: one case per workload under a
fault. The rest is marked ``acceptance`` and runs in ``make acceptance`` (the
nightly); between those runs every case's recorded history keeps the checker
honest (``tests/checkers/test_recorded_histories.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli.suite import load_matrix, run_case
from tests.nemesis.probes import netns_available

pytestmark = [
    pytest.mark.slow,
    pytest.mark.netns,
    pytest.mark.integration,
    pytest.mark.broker,
    pytest.mark.spark,
]

MATRIX = Path(__file__).resolve().parents[2] / "suites" / "acceptance.yml"
CASES = load_matrix(MATRIX)[1]
# One live case per workload, seed 1: queue and txn under pause (a queue
# run under partitions and a txn run under kills are in
# test_runner_cluster.py and test_txn_cluster.py), the other three under the
# mix, which hits a node with each fault kind.
SLICE = {
    "workload=queue-nemesis=pause-seed=1",
    "workload=txn-nemesis=pause-seed=1",
    "workload=eos-nemesis=kill+pause+partition-seed=1",
    "workload=idempotence-nemesis=kill+pause+partition-seed=1",
    "workload=group-nemesis=kill+pause+partition-seed=1",
}
# A fault's completion names what it hit; healing ops (start, resume,
# stop-partition) do not count.
EFFECTS = {"kill": "killed", "pause": "paused", "start-partition": "grudge"}


def faults_that_bit(history: Path, time_limit_s: float) -> list[dict[str, Any]]:
    """The nemesis completions of a run that hit at least one node and were
    invoked before the workload's time limit."""
    ops = [json.loads(line) for line in history.read_text().splitlines() if line.strip()]
    invoked: dict[str, int] = {}
    bit = []
    for op in ops:
        if op.get("process") != "nemesis" or op.get("f") not in EFFECTS:
            continue
        if op["type"] == "invoke":
            invoked[op["f"]] = op["time"]
            continue
        hit = isinstance(op.get("value"), dict) and op["value"].get(EFFECTS[op["f"]])
        if hit and invoked.get(op["f"], op["time"]) < time_limit_s * 1e9:
            bit.append(op)
    return bit


def _nemesis(type_: str, f: str, value: Any, time: float) -> dict[str, Any]:
    return {"process": "nemesis", "type": type_, "f": f, "value": value, "time": time}


def test_faults_that_bit_reads_nemesis_completions(tmp_path: Path) -> None:
    ops = [
        _nemesis("invoke", "kill", "one", 1),
        _nemesis("info", "kill", {"killed": ["n1"]}, 2),
        _nemesis("invoke", "pause", "one", 3),
        _nemesis("info", "pause", {"paused": []}, 4),  # hit nothing
        _nemesis("invoke", "start", "all", 5),
        _nemesis("info", "start", {"started": ["n1"]}, 6),  # a heal
        _nemesis("invoke", "start-partition", "one", 7e9),
        _nemesis("info", "start-partition", {"kind": "one", "grudge": {"n1": ["n2"]}}, 8e9),
        {"process": 0, "type": "ok", "f": "kill", "value": {"killed": ["n1"]}, "time": 9},
    ]
    history = tmp_path / "history.jsonl"
    history.write_text("".join(json.dumps(o) + "\n" for o in ops))
    assert [o["time"] for o in faults_that_bit(history, 6)] == [2]
    assert [o["time"] for o in faults_that_bit(history, 10)] == [2, 8e9]


def test_the_slice_names_cases_of_the_matrix() -> None:
    assert {name for name, _, _ in CASES} >= SLICE


@pytest.mark.parametrize(
    ("name", "settings", "expect"),
    [
        pytest.param(*case, id=case[0], marks=[] if case[0] in SLICE else pytest.mark.acceptance)
        for case in CASES
    ],
)
def test_case_ends_as_expected(
    name: str, settings: dict[str, Any], expect: list[str], tmp_path: Path
) -> None:
    reason = netns_available()
    if reason:
        pytest.skip(reason)
    attempt = run_case(name, settings, str(tmp_path / "store"))
    assert attempt.verdict in expect, (
        f"{name}: {attempt.verdict} {attempt.anomalies or ''} {attempt.error or ''} "
        f"(run: {attempt.run})"
    )
    if settings.get("nemesis", "none") != "none":
        history = Path(str(attempt.run)) / "history.jsonl"
        assert faults_that_bit(history, float(settings["time_limit"])), (
            f"{name}: no fault hit a node while the workload ran (run: {attempt.run})"
        )
