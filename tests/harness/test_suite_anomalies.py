"""Suite cases: the anomaly kinds their invalid verdict must include, and
schedule files named beside the suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import UsageError
from harness.cli.suite import load_matrix, settings_only


def matrix(tmp_path: Path, case: str) -> Path:
    path = tmp_path / "m.yml"
    path.write_text(f"name: m\ncases:\n  - {case}\n")
    return path


def test_anomalies_ride_with_the_case_but_not_into_the_test(tmp_path: Path) -> None:
    _, cases = load_matrix(matrix(tmp_path, "{bug: [no-dedup], seed: 3, anomalies: [duplicate]}"))
    _, settings, expect = cases[0]
    assert settings["anomalies"] == ["duplicate"] and expect == ["invalid"]
    assert settings_only(settings) == {"bug": ["no-dedup"], "seed": 3}


@pytest.mark.parametrize("bad", ["duplicate", "[1, 2]"])
def test_anomalies_must_be_a_list_of_kinds(tmp_path: Path, bad: str) -> None:
    with pytest.raises(UsageError, match="anomalies must be a list"):
        load_matrix(matrix(tmp_path, f"{{seed: 1, anomalies: {bad}}}"))


def test_the_nightly_matrix_resolves_with_its_bug_cases() -> None:
    nightly = Path(__file__).resolve().parents[2] / "suites" / "nightly.yml"
    _, cases = load_matrix(nightly)
    bugs = [s for _, s, _ in cases if s.get("bug")]
    assert bugs and all(s["anomalies"] for s in bugs)


def test_a_case_schedule_is_read_beside_its_suite_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cut.yml").write_text("faults:\n- {at: 1, fault: kill, target: one, duration: 2}\n")
    suite = matrix(tmp_path, "{schedule: cut.yml, seed: 1}")
    loaded = []
    for where in (tmp_path, tmp_path.parent):
        monkeypatch.chdir(where)
        loaded.append(load_matrix(suite)[1][0])
    assert loaded[0] == loaded[1]
    name, settings, _ = loaded[0]
    assert settings["schedule"] == str(tmp_path.resolve() / "cut.yml")
    assert name == "schedule=cut.yml-seed=1"
