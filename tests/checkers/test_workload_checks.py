"""The eos and group workload checks: each kind is found on its scenario's
key and not on its near miss (one history holds both); the regression and
ownership rules agree with a brute-force reading of random histories. Queue
histories stay clean: tests/checkers/test_anomalies.py checks them whole."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkers import check
from checkers.kinds import explain
from tests.checkers import workload_scenarios as ws
from tests.checkers.dsl import History, poll, send

pytestmark = [pytest.mark.spark, pytest.mark.slow]

KINDS = {
    "eos-lost": ws.LOST,
    "eos-duplicate": ws.DUP + ws.SHIFT,
    "committed-offset-regression": ws.REGRESS,
    "split-ownership": ws.SPLIT,
    "resume-skip": ws.RESUME,
}


@pytest.fixture(scope="module")
def found(spark) -> dict[str, Any]:
    return check(ws.history().table(), spark=spark)


@pytest.mark.parametrize("kind", list(KINDS))
def test_kind_is_found_and_its_near_miss_is_not(found: dict[str, Any], kind: str) -> None:
    instances = found["anomalies"].get(kind, [])
    assert [i["key"] for i in instances] == [KINDS[kind]], instances
    assert str(KINDS[kind]) in instances[0]["explanation"]


def test_instances_name_the_ops_involved(found: dict[str, Any]) -> None:
    lost = found["anomalies"]["eos-lost"][0]
    assert (lost["value"], lost["offset"], lost["output_key"]) == (2, 1, ws.LOST + ws.SHIFT)
    assert lost["op"]["process"] == "3" and lost["consumed_upto"] == 1
    dup = found["anomalies"]["eos-duplicate"][0]
    assert dup["offsets"] == [0, 1] and dup["input_key"] == ws.DUP
    assert sorted(c["op"]["process"] for c in dup["copies"]) == ["2", "3"]
    reg = found["anomalies"]["committed-offset-regression"][0]
    assert (reg["prev_offset"], reg["offset"]) == (5, 3)
    assert (reg["prev_op"]["process"], reg["op"]["process"]) == ("20", "21")
    split = found["anomalies"]["split-ownership"][0]
    assert (split["first"]["process"], split["second"]["process"]) == ("22", "23")
    assert split["from"] < split["until"]
    assert "completion of the op whose rebalance log assigned" in split["explanation"]
    skip = found["anomalies"]["resume-skip"][0]
    assert (skip["offset"], skip["committed"], skip["skipped"]) == (3, 1, [1, 2])
    assert skip["op"]["process"] == "31" and skip["commit_op"]["process"] == "30"
    assert found["valid"] is False


def test_every_kind_has_its_own_wording() -> None:
    case = {"key": 1, "value": 2, "offset": 3, "output_key": 11, "consumed_upto": 4}
    assert "the copy lost it" in explain("eos-lost", case)


# -- properties: Spark against a brute-force reading of the same ops ---------------


@st.composite
def group_histories(draw: st.DrawFn) -> tuple[History, set[int], set[tuple[int, int]]]:
    """Commits of key 0 and ownership logs of key 1 by three processes, with
    random interleavings; returns the history, the indices of commit
    completions that regress, and the process pairs whose ownership overlaps."""
    h = History()
    pending: dict[int, Any] = {}
    commit_of: dict[int, tuple[int, int]] = {}  # completion index -> (invoke index, offset)
    events: list[tuple[int, str, int, int]] = []  # process, event, invoke idx, completion idx
    for step in draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 6)), max_size=14)):
        p, choice = step
        if p in pending:
            inv, what, offset = pending.pop(p)
            extra: dict[str, Any] = {}
            if what == "commit":
                extra["commit"] = ws.commit({0: offset})
            elif what in ("assigned", "revoked"):
                extra["rebalance_log"] = [{"type": what, "keys": [1]}]
            done = h.complete(inv, "ok", [poll({})], **extra)
            if what == "commit":
                commit_of[done] = (inv.index, offset)
            elif what != "plain":
                events.append((p, what, inv.index, done))
        else:
            what = ("commit", "commit", "commit", "assigned", "revoked", "plain", "plain")[choice]
            offset = draw(st.integers(0, 5))
            pending[p] = (h.invoke(p, "poll", [poll({})]), what, offset)
    for inv, _, _ in pending.values():
        h.complete(inv, "info", [poll({})])
    regress = {
        done
        for done, (inv, off) in commit_of.items()
        if any(d2 < inv and o2 > off for d2, (_, o2) in commit_of.items())
    }
    # ownership is checked only in histories whose consumers commit (a group's)
    return h, regress, _overlaps(h, events) if commit_of else set()


def _overlaps(h: History, events: list[tuple[int, str, int, int]]) -> set[tuple[int, int]]:
    """Pairs of processes whose certain ownership intervals of key 1 overlap."""
    last_invoke = {}
    for op in h.ops:
        if op.type == "invoke":
            last_invoke[op.process] = op.index
    spans: list[tuple[int, int, int]] = []
    for i, (p, what, _, done) in enumerate(events):
        if what != "assigned":
            continue
        end = next(
            (inv for q, w, inv, _ in events[i + 1 :] if q == p and w == "revoked"),
            last_invoke[p],
        )
        if done < end:
            spans.append((p, done, end))
    return {
        (a, b) for a, s1, e1 in spans for b, s2, e2 in spans if a < b and max(s1, s2) < min(e1, e2)
    }


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(group_histories())
def test_group_rules_match_brute_force(spark, case) -> None:
    h, regress, overlaps = case
    result = check(h.table(), spark=spark)
    found = {i["op"]["index"] for i in result["anomalies"].get("committed-offset-regression", [])}
    assert found == regress
    pairs = {
        (int(i["first"]["process"]), int(i["second"]["process"]))
        for i in result["anomalies"].get("split-ownership", [])
    }
    assert pairs == overlaps


def retried_copy(read_aborted: bool) -> History:
    """An info copy sends 2 to the output at offset 2 and its transaction aborts
    (offset 3 is its abort marker); an OK retry copies 2 again, to offset 4.
    A read_committed reader goes 0 → 4, unless ``read_aborted``."""
    h = History()
    out = ws.SHIFT
    h.txn(1, [send(0, 1, 0), send(0, 2, 1)])
    ws.copy(h, 2, {0: [(0, 1)]}, [(out, 1, 0)])
    ws.copy(h, 3, {0: [(1, 2)]}, [(out, 2, 2)], "info")
    ws.copy(h, 4, {0: [(1, 2)]}, [(out, 2, 4)])
    output = [(0, 1), (2, 2), (4, 2)] if read_aborted else [(0, 1), (4, 2)]
    h.txn(5, [poll({0: [(0, 1), (1, 2)], out: output})])
    return h


def test_a_retried_copy_of_an_aborted_info_copy_is_no_duplicate(spark) -> None:
    """The info copy's send is proven only by a read at its own offset: the
    retry's record, read at offset 4, says nothing about offset 2."""
    clean = check(retried_copy(read_aborted=False).table(), spark=spark)
    assert clean["valid"] is True, sorted(clean["anomalies"])
    dirty = check(retried_copy(read_aborted=True).table(), spark=spark)
    assert {"duplicate", "eos-duplicate"} <= set(dirty["anomalies"]), sorted(dirty["anomalies"])
