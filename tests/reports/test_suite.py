"""``jepka suite``: matrix expansion, classification (pass / fail / flaky) and outputs."""

from __future__ import annotations

import json
import os
import signal
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from harness.cli import ExitCode, main
from harness.cli import suite as suite_cli
from harness.cli.suite import load_matrix
from harness.stopping import exit_once
from reports.suite import Attempt, CaseOutcome, suite_index, suite_junit


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "matrix.yml"
    p.write_text(text)
    return p


def test_matrix_expands_every_combination_then_the_extra_cases(tmp_path: Path) -> None:
    name, cases = load_matrix(
        write(
            tmp_path,
            """
name: nightly
base: {time-limit: 5}
matrix:
  workload: [queue, txn]
  nemesis: [none, "kill,pause"]
expect: [valid, unknown]
cases:
  - {name: must-fail, nemesis: partition, seed: 3}
""",
        )
    )
    assert name == "nightly"
    assert [c[0] for c in cases] == [
        "workload=queue-nemesis=none",
        "workload=queue-nemesis=kill+pause",
        "workload=txn-nemesis=none",
        "workload=txn-nemesis=kill+pause",
        "must-fail",
    ]
    assert cases[1][1] == {"time_limit": 5, "workload": "queue", "nemesis": "kill,pause"}
    assert cases[0][2] == ["valid", "unknown"] and cases[4][2] == ["invalid"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("matrix: {seed: [1]}\nextra: 1\n", "unknown field(s) extra"),
        ("matrix: {nemesis: [fire]}\n", "case nemesis=fire: nemesis: 'fire' is not one of"),
        ("matrix: {seed: [1]}\nexpect: green\n", "expect: ['green'] is not one of"),
        ("cases: [{name: a}, {name: a}]\n", "case names repeat: a"),
        ("name: x\n", "no cases"),
        ("matrix: [1, 2]\n", "matrix: expected a mapping, got list"),
        ("matrix: {seed: [1\n", "not valid YAML"),
    ],
)
def test_bad_matrices_stop_before_anything_runs(
    tmp_path: Path, capsys, text: str, message: str
) -> None:
    assert main(["suite", str(write(tmp_path, text))]) == 254
    err = capsys.readouterr().err
    assert err.startswith("jepka suite: ") and message in err and err.count("\n") == 1


def test_classification() -> None:
    def case(*verdicts: str) -> CaseOutcome:
        return CaseOutcome("c", {}, ["valid"], [Attempt(v) for v in verdicts])

    assert case("valid", "valid").status == "pass"
    assert case("invalid", "crashed").status == "fail"
    assert case("invalid", "valid").status == "flaky"
    assert case().status == "not-run"  # the suite was stopped before it
    stopped = case("valid")
    stopped.repeat = 3
    assert stopped.status == "stopped"  # before its second attempt
    stopped.attempts.append(Attempt("invalid"))
    assert stopped.status == "flaky"  # however few attempts ran


def test_suite_outputs_name_flaky_cases(tmp_path: Path) -> None:
    run = tmp_path / "store" / "c" / "t1"
    run.mkdir(parents=True)
    cases = [
        CaseOutcome("steady", {"seed": 1}, ["valid"], [Attempt("valid", str(run))]),
        CaseOutcome(
            "wobbly",
            {"seed": 2},
            ["valid"],
            [Attempt("invalid", str(run), {"lost-write": 2}), Attempt("valid")],
        ),
    ]
    root = ET.fromstring(suite_junit("s", cases))
    assert root.get("tests") == "2" and root.get("failures") == "1"
    fail = root.find("testcase[@name='wobbly']/failure")
    assert fail.get("type") == "flaky"
    assert fail.get("message") == "flaky: expected valid, got invalid, valid"
    assert "attempt 1: invalid {'lost-write': 2} in" in fail.text
    out = tmp_path / "store" / "suites" / "s" / "t"
    out.mkdir(parents=True)
    page = suite_index("s", cases, out)
    assert 'href="../../../c/t1/report.html"' in page
    assert "1 as expected, 1 flaky, 0 unexpected" in page and "FLAKY" in page


def test_jepka_suite_runs_cases_and_reports_unexpected_verdicts(tmp_path: Path) -> None:
    """Real runs that crash at once (the ssh backend without hosts): one case
    expects that, the other expected a valid run, so the suite fails."""
    matrix = write(
        tmp_path,
        """
name: quick
base: {time_limit: 1, cluster: ssh}
matrix: {seed: [1]}
expect: crashed
cases:
  - {name: wants-valid, seed: 2, expect: valid}
""",
    )
    store = tmp_path / "store"
    assert main(["suite", str(matrix), "--repeat", "2", "--store", str(store)]) == 1
    (out,) = (store / "suites" / "quick").iterdir()
    summary = {c["name"]: c for c in json.loads((out / "suite.json").read_text())}
    assert {n: c["status"] for n, c in summary.items()} == {"seed=1": "pass", "wants-valid": "fail"}
    attempt = summary["wants-valid"]["attempts"][1]
    assert attempt["verdict"] == "crashed" and "ssh" in attempt["error"]
    assert len(summary["seed=1"]["attempts"]) == 2
    junit = ET.fromstring((out / "junit.xml").read_text())
    assert junit.get("failures") == "1"
    assert "1 unexpected" in (out / "index.html").read_text()


@pytest.mark.parametrize("stop", ["ctrl-c", "sigterm"])
def test_a_stopped_suite_reports_the_cases_it_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop: str
) -> None:
    """Stopped in its second case, the suite still writes its index, JUnit
    file and summary: the first case as it ended, the other two as not run
    (skipped), under STOPPED; and it exits as the stop asks."""
    matrix = write(tmp_path, "name: cut\nmatrix: {seed: [1, 2, 3]}\n")
    ran: list[str] = []

    def run_case(name: str, settings: dict[str, Any], store: str | None) -> Attempt:
        ran.append(name)
        if len(ran) == 2 and stop == "ctrl-c":
            raise KeyboardInterrupt  # as call_isolated raises it once the case has healed
        if len(ran) == 2:  # between cases: no run to pass it on to
            assert signal.getsignal(signal.SIGTERM) is exit_once  # else it ends pytest
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        return Attempt("valid", seconds=1.0)

    monkeypatch.setattr(suite_cli, "run_case", run_case)
    argv = ["suite", str(matrix), "--store", str(tmp_path / "store")]
    if stop == "ctrl-c":
        assert main(argv) == ExitCode.UNKNOWN
    else:
        with pytest.raises(SystemExit) as stopped:
            main(argv)
        assert stopped.value.code == 128 + signal.SIGTERM
    assert ran == ["seed=1", "seed=2"]
    (out,) = (tmp_path / "store" / "suites" / "cut").iterdir()
    summary = json.loads((out / "suite.json").read_text())
    assert [(c["name"], c["status"]) for c in summary] == [
        ("seed=1", "pass"),
        ("seed=2", "not-run"),
        ("seed=3", "not-run"),
    ]
    junit = ET.fromstring((out / "junit.xml").read_text())
    assert (junit.get("tests"), junit.get("failures"), junit.get("skipped")) == ("3", "0", "2")
    assert [tc.find("skipped") is not None for tc in junit.iter("testcase")] == [False, True, True]
    page = (out / "index.html").read_text()
    assert "STOPPED" in page and "after 1 of 3 cases; 2 not run" in page


def test_a_suite_stopped_between_repeats_keeps_the_attempts_that_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped in a case's second attempt, the suite reports the first attempt
    (its run linked) under ``stopped``, skipped in the JUnit file, not as a
    case that never ran."""
    matrix = write(tmp_path, "name: cut\nmatrix: {seed: [1, 2]}\n")
    run = tmp_path / "store" / "queue-none" / "t1"
    run.mkdir(parents=True)
    ran: list[str] = []

    def run_case(name: str, settings: dict[str, Any], store: str | None) -> Attempt:
        ran.append(name)
        if len(ran) == 2:
            raise KeyboardInterrupt  # as call_isolated raises it once the case has healed
        return Attempt("valid", str(run), seconds=1.0)

    monkeypatch.setattr(suite_cli, "run_case", run_case)
    argv = ["suite", str(matrix), "--repeat", "2", "--store", str(tmp_path / "store")]
    assert main(argv) == ExitCode.UNKNOWN
    assert ran == ["seed=1", "seed=1"]
    (out,) = (tmp_path / "store" / "suites" / "cut").iterdir()
    summary = json.loads((out / "suite.json").read_text())
    assert [(c["name"], c["status"], len(c["attempts"])) for c in summary] == [
        ("seed=1", "stopped", 1),
        ("seed=2", "not-run", 0),
    ]
    junit = ET.fromstring((out / "junit.xml").read_text())
    assert (junit.get("failures"), junit.get("skipped")) == ("0", "2")
    skipped = junit.find("testcase[@name='seed=1']/skipped")
    assert skipped is not None
    assert skipped.get("message") == "stopped after 1 of 2 attempts: valid"
    page = (out / "index.html").read_text()
    assert "after 0 of 2 cases; 1 stopped between its repeats; 1 not run." in page
    assert 'href="../../../queue-none/t1/report.html"' in page


def test_a_case_cut_short_with_an_unexpected_verdict_says_the_suite_stopped(
    tmp_path: Path,
) -> None:
    """An unexpected verdict in the last case's first attempt is reported as a
    failure, and the suite as stopped, not as one that ran every attempt."""
    cases = [
        CaseOutcome("a", {}, ["valid"], [Attempt("valid"), Attempt("valid")], repeat=2),
        CaseOutcome("b", {}, ["valid"], [Attempt("invalid")], repeat=2),
    ]
    assert [c.status for c in cases] == ["pass", "fail"]
    page = suite_index("s", cases, tmp_path)
    assert "STOPPED" in page and "after 1 of 2 cases; 1 stopped between its repeats." in page
    fail = ET.fromstring(suite_junit("s", cases)).find("testcase[@name='b']/failure")
    assert fail is not None
    assert fail.get("message") == (
        "fail: expected valid, got invalid (stopped after 1 of 2 attempts)"
    )


def test_the_nightly_matrix_resolves() -> None:
    name, cases = load_matrix(Path(__file__).resolve().parents[2] / "suites" / "nightly.yml")
    assert name == "nightly" and len([c for c in cases if not c[1].get("bug")]) == 21
    assert {c[1].get("nemesis", "none") for c in cases} >= {"none", "partition", "kill", "pause"}
