"""The linearizability view's data: realtime inversions among a key's sends,
the bounded choice of intervals, and the checker's cycles placed on keys."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from history import flatten
from history.op import Op
from reports import linear
from reports.cycles import cycle_views, key_labels
from reports.linear import MAX_INTERVALS, MAX_KEYS, MAX_PAIRS, inversions, linear_view, select
from reports.pairs import Pairs, fold
from tests.reports.conftest import HistoryBuilder, queue_history, queue_results


def _pairs(h: HistoryBuilder) -> Pairs:
    return fold(flatten(Op.from_dict(o) for o in h.ops))[0]


def _arrays(*sends: tuple[int, float, float]) -> tuple[np.ndarray, ...]:
    offset, t0, t1 = zip(*sends, strict=True)
    return np.array(offset), np.array(t0, dtype=float), np.array(t1, dtype=float)


def test_a_send_completed_before_another_began_must_land_below_it() -> None:
    # 0 and 1 in order; 2 overlaps 3 (either order is fine); 4 began after 0..3
    # completed yet landed below 1, 2 and 3: its witness is the highest, 2
    sends = _arrays((0, 0, 1), (1, 2, 3), (5, 4, 6), (4, 5, 7), (2, 8, 9))
    a, b = inversions(*sends)
    assert (a.tolist(), b.tolist()) == ([2], [4])
    assert [len(x) for x in inversions(*_arrays((0, 0, 1)))] == [0, 0]
    # completing exactly when the other begins is not before it
    assert inversions(*_arrays((1, 0, 1), (0, 1, 2)))[1].tolist() == []


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.integers(0, 20), st.integers(1, 8)), min_size=1, max_size=12
    )
)
def test_inversions_agree_with_every_pair_compared(sends: list[tuple[int, int, int]]) -> None:
    offset, t0, t1 = _arrays(*[(o, s, s + d) for o, s, d in sends])
    a, b = inversions(offset, t0, t1)
    n = len(offset)
    before = [[t1[x] < t0[y] and offset[x] > offset[y] for x in range(n)] for y in range(n)]
    assert sorted(b.tolist()) == [y for y in range(n) if any(before[y])]
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        assert before[y][x]
        assert offset[x] == max(offset[z] for z in range(n) if before[y][z])


def test_select_keeps_the_focus_its_windows_then_an_even_sample() -> None:
    keep, windowed = select(1000, np.array([500]), budget=50, context=5)
    assert len(keep) == 50 and windowed == 11
    assert set(range(495, 506)) <= set(keep.tolist())
    rest = np.setdiff1d(keep, np.arange(495, 506))
    assert rest[0] == 0 and rest[-1] == 999  # the sample spans the whole key
    assert select(10, np.array([3]), budget=50, context=5)[0].tolist() == list(range(10))
    keep, windowed = select(1000, np.array([10, 900]), budget=5, context=5)
    assert {10, 900} <= set(keep.tolist()) and len(keep) == windowed == 5


def test_the_checkers_realtime_cycle_is_placed_on_its_key() -> None:
    h, marks = queue_history(lose=True)
    pairs, results = _pairs(h), queue_results(lose=True)
    cycles = cycle_views(pairs, results)
    view = linear_view(pairs, key_labels(pairs, {}), cycles, results)
    assert view["checked"]
    first, second, *rest = view["keys"]
    # txn A polled key 3 at offset 0 what txn B sent there, yet A completed before B began
    assert (first["key"], first["cycles"], first["checker_pairs"], first["pairs_total"]) == (
        "3",
        [0],
        1,
        1,
    )
    ops = first["ops"]
    (pair,) = first["pairs"]
    a, b, cycle = pair
    assert (ops["index"][a], ops["mop"][a]) == (marks["txn-a"], "r")
    assert (ops["index"][b], ops["mop"][b], ops["offset"][b]) == (marks["txn-b"], "w", 0)
    assert cycle == 0 and ops["t1"][a] < ops["t0"][b]
    assert second["key"] == "2" and second["cycles"] == [0] and second["pairs"] == []
    assert rest[0]["key"] == "0" and rest[0]["named"]  # the lost write's key
    assert rest[0]["ops"]["offset"] == list(range(6)) and rest[0]["violations"] == 0
    valid, calm_pairs = queue_results(lose=False), _pairs(queue_history(False)[0])
    calm = linear_view(calm_pairs, {}, cycle_views(calm_pairs, valid), valid)
    assert all(not k["pairs"] for k in calm["keys"])
    assert not linear_view(pairs, {}, [], {"anomalies": {}})["checked"]


def test_a_long_key_is_bounded_around_its_inversions() -> None:
    """5,000 sends to key 0 by one process, in order, except that the send of
    value 2500 completed before the next began yet landed above it."""
    h = HistoryBuilder()
    for v in range(5000):
        off = {2500: 2501, 2501: 2500}.get(v, v)
        h.op(0, "invoke", "send", [["send", 0, v]])
        h.op(0, "ok", "send", [["send", 0, [off, v]]])
    pairs = _pairs(h)
    (key,) = linear_view(pairs, {}, [], {"valid": True})["keys"]
    ops = key["ops"]
    assert key["sends"] == 5000 and key["violations"] == 1
    assert len(ops["t0"]) == MAX_INTERVALS == key["windowed"] + key["sampled"]
    ((a, b, cycle),) = key["pairs"]
    assert (ops["value"][a], ops["offset"][a], ops["value"][b], ops["offset"][b]) == (
        2500,
        2501,
        2501,
        2500,
    )
    assert cycle == -1 and ops["t1"][a] < ops["t0"][b]
    assert set(range(2480, 2521)) <= set(ops["offset"])  # the window around them
    assert min(ops["offset"]) == 0 and max(ops["offset"]) == 4999


def test_pairs_drawn_are_capped_and_their_count_is_exact() -> None:
    h = HistoryBuilder()
    for v in range(400):  # one after another, each landing below the one before
        h.op(0, "invoke", "send", [["send", 0, v]])
        h.op(0, "ok", "send", [["send", 0, [399 - v, v]]])
    (key,) = linear_view(_pairs(h), {}, [], {"valid": True})["keys"]
    assert key["violations"] == key["pairs_total"] == 399 and len(key["pairs"]) == MAX_PAIRS


def test_many_keys_are_listed_up_to_a_bound_and_few_carry_intervals(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(linear, "MAX_LISTED", 20)
    h = HistoryBuilder()
    for k in range(30):
        h.op(0, "invoke", "send", [["send", k, k]])
        h.op(0, "ok", "send", [["send", k, [0, k]]])
    view = linear_view(_pairs(h), {}, [], {"anomalies": {"lost-write": [{"key": 25}]}})
    assert len(view["keys"]) == 20 and view["unlisted"] == 10
    assert view["keys"][0]["key"] == "25"  # the key an anomaly names first
    assert [k["key"] for k in view["keys"][1:4]] == ["0", "1", "2"]
    assert sum("ops" in k for k in view["keys"]) == MAX_KEYS


def test_a_pair_the_checker_names_is_drawn_and_counted_once() -> None:
    h = HistoryBuilder()
    h.op(0, "invoke", "send", [["send", 0, 1]])
    a = h.op(0, "ok", "send", [["send", 0, [1, 1]]])
    h.op(1, "invoke", "send", [["send", 0, 2]])
    b = h.op(1, "ok", "send", [["send", 0, [0, 2]]])
    op_a, op_b = {"index": a, "process": "0"}, {"index": b, "process": "1"}
    ww = {"from": op_b, "to": op_a, "rel": "ww", "key": 0, "v1": 2, "v2": 1, "o1": 0, "o2": 1}
    cycle = {"steps": [ww, {"from": op_a, "to": op_b, "rel": "realtime"}], "explanation": "."}
    results = {"valid": False, "anomalies": {"G0-realtime": [cycle]}}
    pairs = _pairs(h)
    (key,) = linear_view(pairs, {}, cycle_views(pairs, results), results)["keys"]
    assert (key["violations"], key["checker_pairs"], key["pairs_total"]) == (1, 1, 1)
    ((x, y, c),) = key["pairs"]
    assert (key["ops"]["index"][x], key["ops"]["index"][y], c) == (a, b, 0)
