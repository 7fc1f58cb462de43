"""Every recorded history of the corpus (``tests/data/histories/``, see
``tests/corpus.py``) checks offline exactly as it did when it was recorded:
the same verdict, every kind its case requires, and the same anomaly kinds
with the same counts — so a checker change that alters any recorded result
fails here, naming the case and what differed, without running a cluster.
``make record`` re-records a case from a live run."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from checkers import check
from tests.corpus import (
    CORPUS,
    HISTORY,
    MAX_BYTES,
    ROOT,
    Entry,
    against_case,
    against_recording,
    corpus_bytes,
    entries,
    load_expectation,
    missing_required,
    outcome,
)

ENTRIES = entries()


def test_the_corpus_holds_only_cases_of_the_suites_and_stays_small() -> None:
    recorded = {p.parent for p in CORPUS.rglob(HISTORY)}
    stray = sorted(str(p.relative_to(CORPUS)) for p in recorded - {e.path for e in ENTRIES})
    assert not stray, f"recordings of no case in the suites: {', '.join(stray)}"
    size = corpus_bytes()
    assert size <= MAX_BYTES, f"the corpus is {size / 2**20:.1f} MB, over {MAX_BYTES / 2**20} MB"


def test_a_detection_run_must_show_one_of_its_kinds() -> None:
    (entry,) = [e for e in ENTRIES if e.id == "detect/lso-off-by-one"]
    assert (entry.expect, entry.one_of, entry.random_seed) == (
        ("invalid",),
        ("G1a", "precommitted-read"),
        True,
    )
    found = {"verdict": "invalid", "anomalies": {"G1c": 2, "precommitted-read": 3}}
    assert against_case(entry, found) == []
    other = {"verdict": "invalid", "anomalies": {"G1c": 2}}
    assert against_case(entry, other) == [
        "none of the kinds that find the bug: G1a, precommitted-read"
    ]
    (clean,) = [e for e in ENTRIES if e.id == "detect/correct-txn"]
    assert against_case(clean, other) == ["verdict invalid, the case expects valid"]


@pytest.mark.spark
@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_recorded_history_checks_as_recorded(entry: Entry, spark: SparkSession) -> None:
    where = f"{entry.id} ({entry.path.relative_to(ROOT)})"
    recorded = load_expectation(entry)
    assert recorded is not None, f"{where}: not recorded; make record CASES='{entry.id}'"
    stale = {k: v for k, v in entry.describe().items() if recorded[k] != v}
    assert not stale, f"{where}: recorded for another case ({', '.join(stale)} changed since)"
    got = outcome(check(str(entry.path / HISTORY), spark=spark))
    # the recorded verdict is one the case expects (make record saw to it)
    problems = missing_required(entry, got) + against_recording(recorded, got)
    assert not problems, f"{where}: " + "; ".join(problems)
