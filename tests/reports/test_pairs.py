from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from history import flatten
from history.op import Op
from reports.pairs import fault_intervals, fold, short
from tests.reports.conftest import queue_history


def test_pairs_of_the_known_history() -> None:
    h, marks = queue_history(lose=True)
    pairs, faults, end = fold(flatten(Op.from_dict(o) for o in h.ops))
    assert len(pairs) == 14  # 6 sends, 2 polls, 1 info send, 4 txns, 1 pending poll
    rows = pairs.rows_of(range(len(h.ops)))
    send3 = rows[marks["send-3"]]
    assert rows[marks["send-invoke-3"]] == send3
    assert pairs.type[send3] == "ok"
    assert math.isclose(pairs.t1[send3] - pairs.t0[send3], 0.006)
    assert pairs.value(send3) == [["send", 0, [2, 3]]]
    info = rows[marks["info"]]
    assert (pairs.type[info], pairs.error[info]) == ("info", "timeout")
    assert pairs.value(info) == [["send", 1, 100]]
    pending = len(pairs) - 1
    assert pairs.type[pending] == "pending" and math.isnan(pairs.t1[pending])
    assert pairs.value(pending) == [["poll"]]
    assert [(f.kind, f.f) for f in faults] == [("partition", "start-partition")]
    assert faults[0].end is not None and faults[0].start < faults[0].end <= end
    assert faults[0].value == {"n1": ["n2", "n3"]}


def test_fault_intervals_pair_starts_with_stops() -> None:
    ops = [
        ("kill", "info", 1.0, "n1"),
        ("pause", "info", 2.0, None),
        ("start", "info", 3.0, "n1"),
        ("start-clock-skew", "info", 4.0, None),
        ("stop-clock-skew", "info", 5.0, None),
        ("lose-unfsynced", "info", 6.0, "n2"),
    ]
    got = [(f.kind, f.start, f.end) for f in fault_intervals(ops)]
    assert got == [
        ("kill", 1.0, 3.0),
        ("pause", 2.0, None),
        ("other", 4.0, 5.0),
        ("disk", 6.0, 6.0),
    ]


def test_invoke_only_nemesis_history_still_gives_bands() -> None:
    got = fault_intervals(
        [("start-partition", "invoke", 1.0, None), ("stop-partition", "invoke", 2.0, None)]
    )
    assert [(f.start, f.end) for f in got] == [(1.0, 2.0)]


def test_short_cuts_long_values() -> None:
    assert short("x" * 10, 5) == "xxxx…"
    assert short([1, {"a": None}], 50) == '[1,{"a":null}]'


values = st.integers(0, 10**6)
sends = st.builds(
    lambda k, o, v: ["send", k, [o, v]], st.integers(0, 9), st.none() | st.integers(0, 1000), values
)
polls = st.builds(
    lambda m: ["poll", {str(k): recs for k, recs in m.items()}],
    st.dictionaries(
        st.integers(0, 9),
        st.lists(st.tuples(st.integers(0, 1000), values).map(list), max_size=4),
        max_size=3,
    ),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(sends | polls, min_size=1, max_size=4), min_size=1, max_size=8))
def test_rendered_values_are_what_the_history_says(completions: list[list[list]]) -> None:
    ops = []
    for i, value in enumerate(completions):
        invoke = [["send", m[1], m[2][1]] if m[0] == "send" else ["poll"] for m in value]
        ops.append(
            {
                "index": 2 * i,
                "time": 2 * i,
                "type": "invoke",
                "process": i % 3,
                "f": "txn",
                "value": invoke,
            }
        )
        ops.append(
            {
                "index": 2 * i + 1,
                "time": 2 * i + 1,
                "type": "ok",
                "process": i % 3,
                "f": "txn",
                "value": value,
            }
        )
    pairs, _, _ = fold(flatten(Op.from_dict(o) for o in ops))
    assert [pairs.value(r) for r in range(len(pairs))] == completions


def test_rows_of_finds_invokes_and_completions_only() -> None:
    h, marks = queue_history(lose=False)
    pairs, _, _ = fold(flatten(Op.from_dict(o) for o in h.ops))
    got = pairs.rows_of([marks["send-invoke-1"], marks["send-1"], marks["partition"], -1, 10**6])
    assert got == {marks["send-invoke-1"]: 0, marks["send-1"]: 0}
