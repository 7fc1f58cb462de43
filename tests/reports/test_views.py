"""Anomaly sections, embedded-row selection, offset diagrams and cycle views."""

from __future__ import annotations

import numpy as np

from history import flatten
from history.op import Op
from reports.anomalies import anomaly_sections, instance_ops, named_ops, select_rows
from reports.cycles import cycle_views, key_labels
from reports.kinds import explain
from reports.orders import offset_diagrams
from reports.pairs import fold
from tests.reports.conftest import HistoryBuilder, queue_history, queue_results


def _known(lose: bool = True):
    h, marks = queue_history(lose)
    pairs, _, _ = fold(flatten(Op.from_dict(o) for o in h.ops))
    return pairs, marks, queue_results(lose)


def test_instance_ops_finds_indices_in_every_shape() -> None:
    inst = {
        "writer": 3,
        "reader": [5, 3],
        "ops": [{"index": 9, "process": 1, "time": 77}],
        "cycle": [11],
        "steps": [{"from": {"index": 12, "process": 0}, "to": 3}],
        "messages": [{"value": 4, "writer": {"index": 13, "process": 2}}],
        "offset": 40,
        "key": 1,
        "flag": True,
        "time": 99,
    }
    assert instance_ops(inst) == [3, 5, 9, 11, 12, 13]


def test_sections_put_forbidden_kinds_first_and_explain_them() -> None:
    _, marks, results = _known()
    sections = anomaly_sections(results)
    assert [s["kind"] for s in sections] == [
        "G1c-realtime",
        "int-poll-skip",
        "lost-write",
        "unseen",
        "G0",
    ]
    lost = sections[2]
    assert "write cycles are normal" in sections[4]["why"]
    assert (
        lost["count"] == 1 and not lost["allowed"] and lost["explanation"] == explain("lost-write")
    )
    assert set(lost["instances"][0]["ops"]) == {marks["send-3"], marks["poll"]}
    assert sections[4]["allowed"] and sections[0]["realtime"]
    assert explain("never-heard-of-it").startswith("An anomaly reported by the checker")


def test_select_rows_keeps_named_ops_and_context_within_budget() -> None:
    h = HistoryBuilder()
    for i in range(1000):
        h.op(i % 4, "invoke", "send", [["send", 0, i]])
        h.op(i % 4, "ok", "send", [["send", 0, [i, i]]])
    pairs, _, _ = fold(flatten(Op.from_dict(o) for o in h.ops))
    rows = select_rows(pairs, [1501, 1999], budget=40, context=2)
    assert len(rows) == 40 and np.all(np.diff(rows) > 0)
    assert {748, 749, 750, 751, 752, 997, 998, 999} <= set(rows.tolist())  # op 1501: row 750
    assert set(range(32)) <= set(rows.tolist())  # the rest of the budget: the start
    assert len(select_rows(pairs, [], budget=5000)) == 1000


def test_offset_diagram_of_the_lost_write() -> None:
    pairs, marks, results = _known()
    (diagram,) = offset_diagrams(pairs, results)
    assert diagram["key"] == "0" and diagram["offsets"] == [0, 1, 2, 3, 4, 5]
    assert diagram["highlight"] == ["3"] and diagram["conflicts"] == []
    by_index = {r["index"]: r for r in diagram["rows"]}
    assert by_index[marks["send-3"]]["cells"] == [[2, "w", "3"]]
    assert by_index[marks["send-3"]]["named"]
    poll = by_index[marks["poll"]]["cells"]
    assert [c[0] for c in poll] == [0, 1, 3, 4, 5] and {c[1] for c in poll} == {"r"}


def test_offset_diagram_marks_conflicting_offsets() -> None:
    h = HistoryBuilder()
    h.op(0, "invoke", "send", [["send", 0, 1]])
    h.op(0, "ok", "send", [["send", 0, [0, 1]]])
    h.op(1, "invoke", "poll", [["poll"]])
    h.op(1, "ok", "poll", [["poll", {"0": [[0, 2]]}]])
    pairs, _, _ = fold(flatten(Op.from_dict(o) for o in h.ops))
    results = {
        "anomalies": {
            "inconsistent-offsets": [{"key": 0, "offset": 0, "values": [1, 2], "ops": [1, 3]}]
        }
    }
    (diagram,) = offset_diagrams(pairs, results)
    assert diagram["conflicts"] == [0] and diagram["highlight"] == ["1", "2"]


def test_cycles_carry_their_ops_relations_and_offsets() -> None:
    pairs, marks, results = _known()
    cycles = cycle_views(pairs, results)
    assert [c["kind"] for c in cycles] == ["G1c-realtime", "G0"]
    rt, g0 = cycles
    assert [n["index"] for n in rt["nodes"]] == [marks["txn-b"], marks["txn-a"]]
    assert rt["nodes"][1]["t1"] < rt["nodes"][0]["t0"]  # A completed before B began
    assert [(e["from"], e["to"], e["label"]) for e in rt["edges"]] == [
        (0, 1, "wr 3"),
        (1, 0, "realtime"),
    ]
    assert rt["keys"] == ["2", "3"] and g0["keys"] == ["4", "5"]
    assert [e["label"] for e in g0["edges"]] == ["ww 4", "ww 5"]
    assert [(e["rel"], e["key"], e["offsets"]) for e in rt["edges"]] == [
        ("wr", "3", [0, 0]),
        ("realtime", None, [None, None]),
    ]
    assert [e["offsets"] for e in g0["edges"]] == [[0, 1], [0, 1]]
    labels = key_labels(pairs, {"key_map": {"0": "t/0", "2": "t/2", "3": "t/3"}})
    assert labels == {"0": "t/0", "2": "t/2", "3": "t/3"}
    # keys the map lacks (rotated in) are placed by the run's namespace
    rotated = key_labels(pairs, {"keys": {"0": ["jepka-t0", 0]}, "namespace": "jepka"})
    assert rotated == {
        "0": "jepka-t0/0",
        **{str(k): f"jepka-t{k // 2}/{k % 2}" for k in range(1, 6)},
    }
    assert list(key_labels(pairs, {})) == ["0", "1", "2", "3", "4", "5"]


def test_valid_run_names_only_its_allowed_cycle() -> None:
    pairs, marks, results = _known(lose=False)
    assert named_ops(results) == [marks["txn-c"], marks["txn-d"]]
    assert offset_diagrams(pairs, results) == []  # a cycle names no single key
    assert [c["kind"] for c in cycle_views(pairs, results)] == ["G0"]


def test_counts_come_from_the_checker_totals() -> None:
    results = {
        "anomalies": {"duplicate": [{"key": 1}] * 3},
        "stats": {"anomaly_counts": {"duplicate": 40}},
    }
    (section,) = anomaly_sections(results)
    assert (section["count"], section["stored"], len(section["instances"])) == (40, 3, 3)


def test_when_an_anomaly_became_evident_shows_in_seconds() -> None:
    from reports.anomalies import instance_view

    view = instance_view({"key": 3, "offset": 7, "evident": 12_345_600_000, "ops": [{"index": 4}]})
    assert view["fields"] == {"key": "3", "offset": "7", "evident": "12.346 s into the run"}
