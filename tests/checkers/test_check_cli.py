"""``jepka check``: exit codes, results.json placement, JSON output, and one-line
errors for bad input. Runs in-process to share the test session's Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checkers.synth import generate
from harness.cli import main
from history import write_history
from history.faults import inject

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture
def stored_run(tmp_path: Path) -> Path:
    run = tmp_path / "store" / "queue" / "20260101T000000"
    run.mkdir(parents=True)
    (run / "test.json").write_text("{}\n")
    write_history(inject(generate(3, 120), "lost-write", 1), run / "history.jsonl")
    return run


def test_stored_run_invalid_exit_1_and_results_beside_history(spark, stored_run, capsys) -> None:
    assert main(["check", str(stored_run)]) == 1
    results = json.loads((stored_run / "results.json").read_text())
    assert results["valid"] is False and "lost-write" in results["anomalies"]
    out = capsys.readouterr().out
    assert "INVALID" in out and "lost-write" in out and "results.json" in out


def test_valid_file_exit_0_json_and_no_results_file(spark, tmp_path, capsys) -> None:
    history = tmp_path / "valid.jsonl"
    write_history(generate(4, 120), history)
    assert main(["check", str(history), "--json", "--no-ww-deps"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["valid"] is True and result["stats"]["ww_deps"] is False
    assert not (tmp_path / "results.json").exists()


def test_nothing_to_judge_is_unknown_exit_2(spark, tmp_path) -> None:
    history = tmp_path / "nemesis-only.jsonl"
    lines = [
        {"index": 0, "time": 1, "type": "invoke", "process": "nemesis", "f": "kill", "value": None},
        {"index": 1, "time": 2, "type": "info", "process": "nemesis", "f": "kill", "value": "n1"},
    ]
    history.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert main(["check", str(history)]) == 2


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('{"index": 0, "time": 1, "type": "invoke", "process": 0, "f": "poll"\n', ":1:"),
        (
            '{"index": 0, "time": 1, "type": "invoke", "process": 0, "f": "poll", '
            '"value": [["poll"]]}\n{"index": 1, "time": 2, "type": "maybe", "process": 0, '
            '"f": "poll", "value": [["poll", {}]]}\n',
            ":2:",
        ),
    ],
)
def test_bad_input_exit_254_with_line(tmp_path, capsys, content: str, needle: str) -> None:
    history = tmp_path / "bad.jsonl"
    history.write_text(content)
    assert main(["check", str(history)]) == 254
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "bad.jsonl" + needle in err


def test_missing_path_and_empty_directory_exit_254(tmp_path, capsys) -> None:
    assert main(["check", str(tmp_path / "nope")]) == 254
    assert main(["check", str(tmp_path)]) == 254
    assert "no history" in capsys.readouterr().err
