"""The recorded-history corpus, ``tests/data/histories/``: the checker's
regression test data, like Porcupine's ``test_data/``.

One entry per acceptance case (``suites/acceptance.yml``), per bug case of
the nightly matrix (``suites/nightly.yml``, cases with ``bug:``), for the
bugs in :data:`REVERSE` per bug case run without its bug, and per invocation
of the detection table (``suites/detect.yml``): its standard fault mix on a
seed drawn at random when recorded, a slice of the table that ``make test``
checks deterministically. Each entry keeps
its run's ``history.parquet`` — all the checker reads — and
``expectation.json``: the case (settings, expected verdicts, the kinds an
invalid verdict must include) and what the recorded check gave (verdict and
every anomaly kind with its exact count, allowed kinds included).
``scripts/record_histories.py`` (``make record``) writes them from live runs;
``tests/checkers/test_recorded_histories.py`` checks them offline.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.cli.suite import VERDICT_OF, load_matrix, settings_only
from harness.detect import CORRECT
from harness.detect import load as load_detection

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "histories"
HISTORY = "history.parquet"
EXPECTATION = "expectation.json"
NIGHTLY = ROOT / "suites" / "nightly.yml"
ACCEPTANCE = ROOT / "suites" / "acceptance.yml"
DETECTION = ROOT / "suites" / "detect.yml"
DETECTION_SUITE = "detect"
MAX_BYTES = 30 * 2**20

NIGHTLY_NAME, NIGHTLY_CASES = load_matrix(NIGHTLY)
# The nightly bug cases, each as (bug, settings, expected verdicts).
BUG_CASES = [(s["bug"][0], s, expect) for _, s, expect in NIGHTLY_CASES if s.get("bug")]
# Bugs whose case must be invalid: every one (a case the nightly only
# tracked would expect [invalid, valid]).
CASES = {bug: s for bug, s, expect in BUG_CASES if expect == ["invalid"]}
# Bugs whose case also runs without the bug and must then end valid: proof
# that the bug, not the setup, broke the run.
REVERSE = (
    "lso-off-by-one",
    "no-dedup",
    "hw-truncation",
    "unclean-election",
    "min-isr-ignored",
    "no-epoch-fencing",
    "delayed-endtxn",
)


@dataclass(frozen=True)
class Entry:
    """One recorded case: where it comes from, its settings and expectation."""

    suite: str
    case: str
    settings: dict[str, Any]
    expect: tuple[str, ...]
    #: an invalid verdict must include one of these (how the detection table
    #: counts a bug mode found)
    one_of: tuple[str, ...] = ()
    #: the seed is drawn at random when recorded, as the detection table's are
    random_seed: bool = False

    @property
    def id(self) -> str:
        return f"{self.suite}/{self.case}"

    @property
    def path(self) -> Path:
        return CORPUS / self.suite / self.case

    @property
    def required(self) -> list[str]:
        """The kinds an invalid verdict must include."""
        return list(self.settings.get("anomalies", []))

    def describe(self) -> dict[str, Any]:
        """The case as ``expectation.json`` records it; a recording whose case
        no longer matches this is stale."""
        described = {
            "suite": self.suite,
            "case": self.case,
            "settings": in_repository(self.settings),
            "expect": list(self.expect),
            "required": self.required,
        }
        return described | ({"one_of": list(self.one_of)} if self.one_of else {})


def in_repository(settings: dict[str, Any]) -> dict[str, Any]:
    """Settings with a schedule file named from the repository's root, as
    recorded: the same on every checkout."""
    schedule = settings.get("schedule")
    if isinstance(schedule, str) and Path(schedule).is_absolute():
        return {**settings, "schedule": Path(schedule).relative_to(ROOT).as_posix()}
    return settings


def entries() -> list[Entry]:
    """Every case the corpus holds, acceptance cases first."""
    suite, cases = load_matrix(ACCEPTANCE)
    out = [Entry(suite, name, settings, tuple(expect)) for name, settings, expect in cases]
    for name, settings, expect in NIGHTLY_CASES:
        if not settings.get("bug"):
            continue
        out.append(Entry(NIGHTLY_NAME, name, settings, tuple(expect)))
        if settings["bug"][0] in REVERSE:
            clean = {**settings_only(settings), "bug": []}
            out.append(Entry(NIGHTLY_NAME, f"{name}-without-bug", clean, ("valid",)))
    for inv in load_detection(DETECTION):
        expect = ("valid",) if inv.bug == CORRECT else ("invalid",)
        out.append(
            Entry(DETECTION_SUITE, inv.name, inv.settings, expect, inv.anomalies, random_seed=True)
        )
    return out


def outcome(result: dict[str, Any]) -> dict[str, Any]:
    """What a check gave, as recorded: the verdict and the exact count of
    every anomaly kind (allowed kinds too)."""
    stats = result.get("stats") or {}
    return {
        "verdict": VERDICT_OF.get(result.get("valid"), "unknown"),
        "anomalies": dict(sorted((stats.get("anomaly_counts") or {}).items())),
    }


def against_case(entry: Entry, got: dict[str, Any]) -> list[str]:
    """How an outcome breaks its case's expectation: a verdict not expected,
    or an invalid verdict without a kind the case requires."""
    problems = []
    if got["verdict"] not in entry.expect:
        problems.append(f"verdict {got['verdict']}, the case expects {'/'.join(entry.expect)}")
    return problems + missing_required(entry, got)


def missing_required(entry: Entry, got: dict[str, Any]) -> list[str]:
    """The kinds the case requires that an invalid outcome lacks, as a problem."""
    if got["verdict"] != "invalid":
        return []
    missing = [k for k in entry.required if k not in got["anomalies"]]
    problems = [f"required kinds missing: {', '.join(missing)}"] if missing else []
    if entry.one_of and not set(entry.one_of) & set(got["anomalies"]):
        problems.append(f"none of the kinds that find the bug: {', '.join(entry.one_of)}")
    return problems


def against_recording(recorded: dict[str, Any], got: dict[str, Any]) -> list[str]:
    """How an outcome differs from the recorded one: verdict, kinds gone or
    new, and counts changed."""
    problems = []
    if got["verdict"] != recorded["verdict"]:
        problems.append(f"verdict {got['verdict']}, recorded {recorded['verdict']}")
    was, now = recorded["anomalies"], got["anomalies"]
    gone = [f"{k} (recorded {was[k]})" for k in sorted(set(was) - set(now))]
    new = [f"{k} ({now[k]})" for k in sorted(set(now) - set(was))]
    changed = [f"{k} {was[k]} -> {now[k]}" for k in sorted(set(was) & set(now)) if was[k] != now[k]]
    for label, items in (("kinds gone", gone), ("new kinds", new), ("counts changed", changed)):
        if items:
            problems.append(f"{label}: {', '.join(items)}")
    return problems


def load_expectation(entry: Entry) -> dict[str, Any] | None:
    """The entry's ``expectation.json``, or None if it was never recorded."""
    path = entry.path / EXPECTATION
    return json.loads(path.read_text()) if path.is_file() else None


def corpus_bytes() -> int:
    """The corpus's size on disk (what the repository carries)."""
    return sum(p.stat().st_size for p in CORPUS.rglob("*") if p.is_file())
