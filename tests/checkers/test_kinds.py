"""Every kind the checker can report has one complete record, and everything
that names kinds agrees with the registry: the check tables, the cycle
search, the sentences in results, the allowances, the reports' paragraphs
and JUnit cases, and the synthetic fault scenarios."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest

from checkers.cycles.kinds import SEARCH_TIMEOUT, SPECS
from checkers.cycles.search import CycleReport
from checkers.kind import Case, CycleSearch, PerKey, PerWorkload
from checkers.kinds import KINDS
from checkers.queue.check import FINDERS as PER_KEY
from checkers.result import allowed_kinds, anomaly_counts, build_result
from checkers.workloads.finders import FINDERS as PER_WORKLOAD
from history import flatten
from history.faults import ECHOES, FAULTS
from reports.anomalies import anomaly_sections
from reports.cycles import cycle_views
from reports.junit import BASE_KINDS, junit_xml
from reports.kinds import GENERIC
from reports.pairs import fold


def op(index: int, process: str = "1", type_: str = "ok", f: str = "txn") -> Case:
    return {"index": index, "process": process, "time": index * 1000, "type": type_, "f": f}


def step(a: int, b: int, rel: str, **detail: Any) -> Case:
    return {"from": op(a, str(a)), "to": op(b, str(b)), "rel": rel, **detail}


def cycle(kind: str, *steps: Case, pure_wr: bool = False) -> Case:
    return {"kind": kind, "pure_wr": pure_wr, "component_size": 2, "steps": list(steps)}


def internal(key: int, delta: int, **more: Any) -> Case:
    return {
        "key": key,
        "delta": delta,
        "prev_value": 1,
        "prev_offset": 0,
        "value": 3,
        "offset": 2,
        "op": op(5),
        **more,
    }


def external(key: int, delta: int, **more: Any) -> Case:
    return {
        "key": key,
        "delta": delta,
        "mode": "read",
        "via": "subscribe",
        "prev_op": op(4),
        "prev_value": 1,
        "prev_offset": 0,
        "prev_first_offset": 0,
        "op": op(6),
        "value": 3,
        "offset": 2,
        **more,
    }


WW = {"key": 7, "v1": 1, "v2": 2, "o1": 0, "o2": 1}
WR = {"key": 7, "value": 1, "offset": 0}
RESET = {"key": 7, "from": 9, "to": 0}
SKIPPED = {"skipped": [2], "skipped_count": 1}

# One instance of each kind, shaped as its finder yields it.
SAMPLES: dict[str, Case] = {
    "inconsistent-offsets": {
        "key": 7,
        "offset": 0,
        "values": [1, 2],
        "ops": [{**op(1), "offset": 0, "value": 1, "mop": "send"}],
    },
    "duplicate": {
        "key": 7,
        "value": 1,
        "offsets": [0, 1],
        "count": 2,
        "ops": [{**op(1), "offset": 0, "value": 1, "mop": "poll"}],
    },
    "lost-write": {
        "key": 7,
        "value": 1,
        "offset": 0,
        "writer": op(1),
        "max_read": op(2),
        "max_offset": 3,
    },
    "unseen": {"key": 7, "count": 1, "messages": [{"offset": None, "value": 1, "writer": op(1)}]},
    "hanging-transaction": {
        "key": 7,
        "offset": 1,
        "high_watermark": 3,
        "open_s": 20.0,
        "consumers": 2,
        "txn_timeout_s": 1.0,
        "first": op(1, f="poll"),
        "op": op(2, f="poll"),
    },
    "G1a": {"key": 7, "value": 1, "offset": 0, "writer": op(1, type_="fail"), "reader": op(2)},
    "precommitted-read": {"key": 7, "value": 1, "offset": 0, "op": op(1)},
    "int-poll-skip": internal(7, 2, **SKIPPED),
    "int-nonmonotonic-poll": internal(7, -1, reset=RESET),
    "poll-skip": external(7, 2, reset=None, **SKIPPED),
    "nonmonotonic-poll": external(7, 0, reset=RESET),
    "nonmonotonic-send": {
        "key": 7,
        "prev_op": op(1),
        "prev_value": 1,
        "prev_offset": 1,
        "op": op(2),
        "value": 2,
        "offset": 0,
    },
    "int-send-skip": internal(7, 2, **SKIPPED),
    "int-nonmonotonic-send": internal(7, -1),
    "eos-lost": {
        "key": 7,
        "value": 1,
        "offset": 0,
        "output_key": 17,
        "op": op(2),
        "consumed_upto": 1,
        "writer": op(1),
    },
    "eos-duplicate": {
        "key": 17,
        "input_key": 7,
        "value": 1,
        "offsets": [0, 1],
        "copies": [{"offset": 0, "op": op(2)}],
    },
    "committed-offset-regression": {
        "key": 7,
        "op": op(2),
        "offset": 3,
        "prev_op": op(1),
        "prev_offset": 5,
    },
    "split-ownership": {
        "key": 7,
        "first": {"process": "1", "assigned_by": op(1), "revoked_by": op(3)},
        "second": {"process": "2", "assigned_by": op(2, "2"), "revoked_by": None},
        "from": 2_000_000,
        "until": 3_000_000,
    },
    "resume-skip": {
        "key": 7,
        "op": op(3),
        "assigned_index": 2,
        "offset": 3,
        "committed": 1,
        "commit_op": None,
        "skipped_count": 2,
        "skipped": [1, 2],
    },
    "G0": cycle("G0", step(1, 2, "ww", **WW), step(2, 1, "ww", **WW)),
    "G1c": cycle("G1c", step(1, 2, "wr", **WR), step(2, 1, "wr", **WR), pure_wr=True),
    "G0-process": cycle("G0-process", step(1, 2, "process", process="1"), step(2, 1, "ww", **WW)),
    "G1c-process": cycle(
        "G1c-process", step(1, 2, "wr", **WR), step(2, 1, "process", process="2"), pure_wr=True
    ),
    "G0-realtime": cycle("G0-realtime", step(1, 2, "realtime"), step(2, 1, "ww", **WW)),
    "G1c-realtime": cycle("G1c-realtime", step(1, 2, "wr", **WR), step(2, 1, "realtime")),
    "cycle-search-timeout": {"spec": "G1c (pure wr)", "kind": "G1c", "component_size": 40},
}


def test_the_check_tables_find_exactly_the_registered_kinds() -> None:
    searched = {spec.kind.name for spec in SPECS} | {SEARCH_TIMEOUT.name}
    tables = [set(PER_KEY), set(PER_WORKLOAD), searched]
    assert sum(len(t) for t in tables) == len(KINDS), "a kind is found in two places"
    assert set().union(*tables) == set(KINDS)


@pytest.mark.parametrize("name", list(KINDS))
def test_every_record_is_complete(name: str) -> None:
    kind = KINDS[name]
    assert kind.name == name
    assert kind.meaning.strip() and kind.meaning.endswith(".")
    assert kind.allowed is None or kind.allowed.why.strip()


@pytest.mark.parametrize("name", list(KINDS))
def test_a_kinds_parts_sit_beside_its_finder(name: str) -> None:
    kind = KINDS[name]
    if isinstance(kind.finder, PerKey | PerWorkload):
        home = kind.finder.find.__module__
    else:  # found by the cycle search: beside its specs
        home = type(SPECS[0]).__module__
    assert kind.sentence.__module__ == home


def test_every_kind_has_a_sample() -> None:
    assert set(SAMPLES) == set(KINDS)


@pytest.mark.parametrize("name", list(KINDS))
def test_the_sentence_renders_on_a_sample(name: str) -> None:
    sample = SAMPLES[name]
    said = KINDS[name].sentence(sample)
    assert said.strip() and said.endswith(".")
    assert "{" not in said, said  # no raw dict leaked into the words
    named = sample.get("key", sample.get("spec", sample.get("kind")))  # a cycle: its kind
    assert str(named) in said


def test_results_explain_and_allow_through_the_records() -> None:
    """Every kind through :func:`checkers.result.build_result`: its instance
    told by its sentence, its allowance's reason given when it is allowed."""
    searched = {s.kind.name for s in SPECS}
    cases = {k: [dict(c)] for k, c in SAMPLES.items() if k not in searched | {SEARCH_TIMEOUT.name}}
    counts = {k: {"total": 1, "allowed": 1} for k in cases}
    report = CycleReport(
        cycles=[SAMPLES[k] for k in searched],
        timeouts=[SAMPLES[SEARCH_TIMEOUT.name]],
        counts=dict.fromkeys(searched, 1),
    )
    result = build_result(cases, counts, report, ww_deps=True, cap=8, stats={"ops": 1}, timings={})
    assert set(result["anomalies"]) == set(KINDS)
    for name, (instance,) in result["anomalies"].items():
        assert instance["explanation"] == KINDS[name].sentence(SAMPLES[name])
    allowed = {k: kind.allowed.why for k, kind in KINDS.items() if kind.allowed}
    assert result["allowed_why"] == allowed


def test_allowances() -> None:
    """An unconditional allowance holds for any instances; the others only
    when every instance is allowed on its own; a kind without one never."""
    for name, kind in KINDS.items():
        some = allowed_kinds({name: {"total": 2, "allowed": 1}})
        every = allowed_kinds({name: {"total": 2, "allowed": 2}})
        assert (name in some) == bool(kind.allowed and kind.allowed.always)
        assert (name in every) == (kind.allowed is not None)
        assert not allowed_kinds({name: {"total": 0, "allowed": 0}})


@pytest.mark.parametrize("name", list(KINDS))
def test_the_reports_tell_each_kind(name: str) -> None:
    """A run with one instance of the kind: its JUnit failure opens with the
    kind's paragraph, so does its section of the page, and the page draws the
    instance as a cycle exactly when the cycle search finds the kind."""
    kind = KINDS[name]
    results = {"valid": False, "anomalies": {name: [SAMPLES[name]]}}
    failure = ET.fromstring(junit_xml(results, "s")).find(f"testcase[@name='{name}']/failure")
    assert failure is not None and failure.text is not None
    assert failure.text.startswith(kind.meaning + "\n") and kind.meaning != GENERIC
    (section,) = anomaly_sections(results)
    assert section["explanation"] == kind.meaning
    pairs, _, _ = fold(flatten([]))
    drawn = [view["kind"] for view in cycle_views(pairs, results)]
    assert drawn == ([name] if kind.finder is CycleSearch.CYCLE else [])
    in_every_check = isinstance(kind.finder, PerKey) or kind.finder is CycleSearch.CYCLE
    assert (name in BASE_KINDS) == in_every_check


def test_fault_scenarios_name_registered_kinds() -> None:
    echoed = set().union(*ECHOES.values())
    assert set(FAULTS) | set(ECHOES) | echoed <= set(KINDS)


def test_anomaly_counts_take_the_checkers_totals_over_the_stored_instances() -> None:
    results = {
        "anomalies": {"lost-write": [{}] * 64, "G0": [{}, {}]},
        "stats": {"anomaly_counts": {"lost-write": 279}},
    }
    assert anomaly_counts(results) == {"lost-write": 279, "G0": 2}
    assert anomaly_counts({"anomalies": {"G0": [{}]}}) == {"G0": 1}
