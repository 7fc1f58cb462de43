"""The detection table: its file, runs on random seeds appending lines, and
the table computed from those lines alone."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.detect import (
    crashes,
    first_time,
    load,
    outcome,
    read_results,
    run_rounds,
    select,
    table,
)
from harness.interpreter import Outcome
from harness.runner import RunResult
from harness.spec import SpecError
from harness.spec import TestSpec as Spec
from harness.store import RunDir

SUITE = Path(__file__).parents[2] / "suites" / "detect.yml"


def test_the_detection_file_has_every_bug_mode_and_workload() -> None:
    from broker.bugs import BUGS
    from harness.spec import WORKLOADS

    invocations = load(SUITE)
    assert sorted(i.bug for i in invocations if i.anomalies) == sorted(BUGS)
    correct = [i.settings["workload"] for i in invocations if not i.anomalies]
    assert set(correct) == set(WORKLOADS)
    assert {i.spec(1, {}).nemesis for i in invocations} == {("standard",)}


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("bugs: 3", "expected a mapping"),
        ("bugs: [{bug: early-ack}]", r"bugs\[1\]: needs bug, workload and anomalies"),
        ("bugs: [{bug: early-ack, workload: queue, anomalies: x}]", "must be a list"),
        ("bugs: [{bug: melt, workload: queue, anomalies: [x]}]", "'melt' is not one of"),
        ("bugs: []\ncorrect: [{acks: '1'}]", r"correct\[1\]: needs a workload"),
    ],
)
def test_a_bad_detection_file_is_named(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "d.yml"
    path.write_text(text)
    with pytest.raises(SpecError, match=error):
        load(path)


class Fake:
    """Finds early-ack's lost write on odd seeds; the correct broker is valid."""

    def __init__(self, root: Path) -> None:
        self.root, self.specs = root, []

    def __call__(self, spec: Spec) -> RunResult:
        self.specs.append(spec)
        lost = bool(spec.bug) and spec.seed % 2 == 1
        writer = {"index": 3, "time": 4_200_000_000}
        anomalies = {"lost-write": [{"key": 1, "writer": writer}]} if lost else {}
        results = {"valid": not lost, "anomalies": anomalies}
        return RunResult(RunDir.create(self.root, spec.test_name), results, Outcome(9, False, 0))


def test_runs_draw_seeds_and_append_a_line_each(tmp_path: Path) -> None:
    invocations = select(load(SUITE), ["early-ack", "correct-queue"])
    fake = Fake(tmp_path / "store")
    results = tmp_path / "detection.jsonl"
    lines = list(run_rounds(invocations, 3, results, run_one=fake))
    assert [x["name"] for x in lines] == ["early-ack", "correct-queue"] * 3
    seeds = [s.seed for s in fake.specs]
    assert len(set(seeds)) == 6  # drawn at random, one per run
    assert read_results(results) == [json.loads(json.dumps(x)) for x in lines]
    bug = [x for x in lines if x["bug"] == "early-ack"]
    assert all(x["detected"] == (x["seed"] % 2 == 1) for x in bug)
    assert all(x["first_s"] == 4.2 for x in bug if x["detected"])
    assert {x["config"] for x in bug} == {invocations[0].config()}
    assert invocations[0].config({"store": "x"}) == invocations[0].config()
    assert invocations[0].config({"time_limit": 20}) != invocations[0].config()
    assert {outcome(x) for x in lines if x["bug"] == "correct"} == {"valid"}

    list(run_rounds(invocations, 1, results, seed=7, run_one=fake))
    assert [s.seed for s in fake.specs[-2:]] == [7, 7]
    assert list(run_rounds(invocations, 5, results, deadline=time.monotonic(), run_one=fake)) == []
    assert len(read_results(results)) == 8  # runs add up in the file


def test_a_crash_is_recorded_and_ctrl_c_stops_without_a_line(tmp_path: Path) -> None:
    invocations = select(load(SUITE), ["no-dedup", "correct-txn"])
    results = tmp_path / "detection.jsonl"
    fake = Fake(tmp_path / "store")

    def crash_then_interrupt(spec: Spec) -> RunResult:
        if spec.bug:
            raise RuntimeError("no network namespaces")
        result = fake(spec)
        result.outcome = Outcome(1, True, 0)
        return result

    lines = list(run_rounds(invocations, 3, results, run_one=crash_then_interrupt))
    assert [(x["name"], x["valid"]) for x in lines] == [("no-dedup", "crashed")]
    assert lines[0]["error"] == "RuntimeError: no network namespaces"
    assert outcome(lines[0]) == "crashed"
    assert read_results(results) == lines
    assert table(lines) == ([], []) and crashes(lines) == 1


def test_a_torn_last_line_is_skipped_and_a_bad_one_named(tmp_path: Path) -> None:
    results = tmp_path / "detection.jsonl"
    good = json.dumps(
        {"at": "2026-11-26T08:00:00Z", "bug": "correct", "workload": "txn", "valid": True,
         "kinds": []}
    )  # fmt: skip
    results.write_text(f"{good}\n{good[:20]}")
    assert len(read_results(results)) == 1
    results.write_text(f"{good[:20]}\n{good}\n")
    with pytest.raises(SpecError, match="line 1: not JSON"):
        read_results(results)
    results.write_text('{"bug": "correct"}\n')
    with pytest.raises(SpecError, match="line 1: not a run's line"):
        read_results(results)


def test_the_table_counts_found_runs_kinds_and_false_alarms() -> None:
    def line(bug: str, workload: str, valid: bool, kinds: list[str], **more: object) -> dict:
        return {"bug": bug, "workload": workload, "valid": valid, "kinds": kinds, **more}

    lines = [
        line("early-ack", "queue", False, ["lost-write", "unseen"], detected=True, first_s=4.0,
             anomalies=["lost-write"]),
        line("early-ack", "queue", False, ["unseen"], detected=False, anomalies=["lost-write"]),
        line("early-ack", "queue", False, ["lost-write"], detected=True, first_s=9.0,
             anomalies=["lost-write"]),
        line("correct", "txn", True, []),
        line("correct", "txn", False, ["G1c"]),
        line("correct", "queue", "unknown", []),
    ]  # fmt: skip
    bugs, correct = table(lines)
    assert bugs == [
        ["early-ack", "queue", "lost-write", "2 of 3", "67%", "lost-write 2, unseen 2", "6.5 s"]
    ]
    assert correct == [["queue", "1", "0", "1", "none"], ["txn", "2", "1", "0", "G1c"]]
    assert table(lines, {"another": ()}) == ([], [])
    assert outcome(lines[4]) == "FALSE ALARM" and outcome(lines[1]) == "missed"


def test_the_table_judges_old_runs_by_the_kinds_named_now() -> None:
    old = {"bug": "no-dedup", "workload": "idempotence", "valid": False, "config": "c",
           "anomalies": ["duplicate"]}  # fmt: skip
    lines = [
        {**old, "kinds": ["G1a"], "detected": False},
        {**old, "kinds": ["duplicate"], "detected": True, "first_s": 3.0},
        {**old, "kinds": ["unseen"], "detected": False},
    ]
    bugs, _ = table(lines, {"c": ("G1a", "duplicate")})
    assert bugs == [
        ["no-dedup", "idempotence", "G1a or duplicate", "2 of 3", "67%",
         "G1a 1, duplicate 1, unseen 1", "3.0 s"]
    ]  # fmt: skip
    assert table(lines)[0][0][2:4] == ["duplicate", "1 of 3"]
    assert table(lines, {"another": ("G1a",)}) == ([], [])


def test_the_first_anomaly_is_its_earliest_op() -> None:
    instances = [{"ops": [{"time": 9_000_000_000}, {"time": 2_500_000_000}]}, {"key": 3}]
    assert first_time(instances) == 2.5
    assert first_time([{"key": 1}]) is None


def test_since_and_until_count_only_the_runs_made_between(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "detection.jsonl"
    config = load(SUITE)[0].config({"time_limit": None})
    before = {"at": "2026-11-26T08:00:00Z", "bug": "early-ack", "workload": "queue",
              "valid": True, "kinds": [], "detected": False, "config": config,
              "anomalies": ["lost-write"]}  # fmt: skip
    after = {**before, "at": "2026-11-26T10:00:00Z", "valid": False, "kinds": ["lost-write"],
             "detected": True}  # fmt: skip
    results.write_text(f"{json.dumps(before)}\n{json.dumps(after)}\n")
    table_args = ["detect", "--table", "--results", str(results)]
    assert main(table_args) == 0
    assert "| 1 of 2 |" in capsys.readouterr().out
    assert main([*table_args, "--since", "2026-11-26T09:30"]) == 0
    out = capsys.readouterr().out
    assert "| 1 of 1 |" in out and "runs since 2026-11-26T09:30:00Z" in out
    assert main([*table_args, "--since", "2026-11-26T11:30+02:00"]) == 0  # 09:30 UTC
    assert "| 1 of 1 |" in capsys.readouterr().out
    assert main([*table_args, "--since", "yesterday"]) == 254
    assert "--since: not a time: 'yesterday'" in capsys.readouterr().err
    assert main([*table_args, "--until", "2026-11-26T09:30"]) == 0
    out = capsys.readouterr().out
    assert "| 0 of 1 |" in out and "runs before 2026-11-26T09:30:00Z" in out
    assert main([*table_args, "--since", "2026-11-26T07:00", "--until", "2026-11-26T10:00"]) == 0
    assert "| 0 of 1 |" in capsys.readouterr().out  # the run at 10:00 is not before it
    assert main([*table_args, "--until", "soon"]) == 254
    assert "--until: not a time: 'soon'" in capsys.readouterr().err
    assert main([*table_args, "--since", "2026-11-26T10:00", "--until", "2026-11-26T09:30"]) == 254
    err = capsys.readouterr().err
    assert "--since 2026-11-26T10:00 is not before --until 2026-11-26T09:30" in err
    results.write_text(json.dumps({**before, "at": "noon"}) + "\n" + json.dumps(after) + "\n")
    assert main(table_args) == 254
    assert "line 1: 'at' is not a time: 'noon'" in capsys.readouterr().err
