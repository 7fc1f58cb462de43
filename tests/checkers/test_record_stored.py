"""``make record``'s ``--from RUN``: a stored run becomes a case's recording
only if it is a run of that case, on the seed it names."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from harness.cli.suite import settings_only
from harness.spec import resolve
from tests import corpus
from tests.corpus import EXPECTATION, HISTORY, ROOT, entries

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "record_histories", ROOT / "scripts" / "record_histories.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stored_run(at: Path, case: str, **changed) -> tuple[Path, int]:
    """A run folder as `jepka detect` leaves it, of the recorded run of
    ``case`` (its settings with ``changed``): its history, its settings and
    seed, and its live check as the recording says it went; and its seed."""
    (entry,) = [e for e in entries() if e.id == case]
    recorded = json.loads((entry.path / EXPECTATION).read_text())
    seed = recorded["seed"]
    settings = settings_only({**entry.settings, "seed": seed, **changed})
    spec = resolve(settings, {"name": "", "store": "store/d1"}, entry.case).to_dict()
    at.mkdir()
    shutil.copyfile(entry.path / HISTORY, at / HISTORY)
    test = {"seed": seed, "spec": spec, "status": "completed"}
    (at / "test.json").write_text(json.dumps(test))
    live = {
        "valid": recorded["verdict"] == "valid",
        "stats": {"anomaly_counts": recorded["anomalies"]},
    }
    (at / "results.json").write_text(json.dumps(live))
    return at, seed


def test_a_stored_run_of_the_case_is_kept_and_others_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spark
) -> None:
    record = script()
    (entry,) = [e for e in entries() if e.id == "detect/no-epoch-fencing"]
    (other,) = [e for e in entries() if e.id == "detect/early-ack"]
    run, seed = stored_run(tmp_path / "run", entry.id)
    changed, _ = stored_run(tmp_path / "changed", entry.id, nodes=3)
    monkeypatch.setattr(corpus, "CORPUS", tmp_path / "corpus")

    (refused,) = record.record_stored(other, run)
    assert "bug" in refused.partition(" its ")[2].split(" differ")[0].split(", ")
    assert not (tmp_path / "corpus").exists()
    assert record.record_stored(entry, run) == []
    kept = tmp_path / "corpus" / "detect" / "no-epoch-fencing"
    assert (kept / HISTORY).read_bytes() == (run / HISTORY).read_bytes()
    expectation = json.loads((kept / EXPECTATION).read_text())
    assert expectation["seed"] == seed and expectation["verdict"] == "invalid"
    assert expectation["recorded_from"] == f"{tmp_path.name}/run"

    assert "its nodes differ" in record.record_stored(entry, changed)[0]
    assert "not a stored run" in record.record_stored(entry, tmp_path)[0]
    test = json.loads((run / "test.json").read_text())
    (run / "test.json").write_text(json.dumps({**test, "status": "interrupted"}))
    assert "did not complete" in record.record_stored(entry, run)[0]
