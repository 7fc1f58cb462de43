"""Anomaly instances grouped into bursts, and the lines and budget of a section."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from checkers.result import anomaly_counts
from reports.anomalies import anomaly_sections, burst_lines
from reports.bursts import bursts, position


def lost(key: int, offset: int) -> dict:
    return {"key": key, "offset": offset, "value": offset + 100, "writer": {"index": offset}}


def test_adjacent_offsets_on_one_key_form_one_burst() -> None:
    instances = [lost(2, o) for o in range(113, 154)] + [lost(2, 160), lost(3, 154)]
    groups = bursts(instances)
    assert [len(g.members) for g in groups] == [41, 1, 1]
    assert groups[0].label("lost-write") == "41 lost-write instances on key 2, offsets 113\u2013153"
    assert groups[1].label("lost-write") is None  # a lone instance reads as its sentence


def test_bursts_follow_log_order_whatever_the_checker_order() -> None:
    instances = [lost(0, 5), lost(1, 1), lost(0, 3), lost(0, 4), lost(1, 2), {"steps": []}]
    groups = bursts(instances)
    assert [g.members for g in groups] == [[2, 3, 0], [1, 4], [5]]
    assert (groups[0].lo, groups[0].hi) == (3, 5)


def test_values_place_an_instance_without_an_offset() -> None:
    instances = [{"key": 4, "value": v} for v in (7, 8, 8)]
    (group,) = bursts(instances)
    assert group.label("duplicate") == "3 duplicate instances on key 4, values 7\u20138"
    assert position({"key": 4, "offset": True}) is None
    assert position({"offset": 3}) is None


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 30)), max_size=60))
def test_every_instance_is_in_exactly_one_burst(spots: list[tuple[int, int]]) -> None:
    instances = [lost(k, o) for k, o in spots]
    groups = bursts(instances)
    assert sorted(i for g in groups for i in g.members) == list(range(len(instances)))
    for g in groups:
        offsets = sorted(instances[i]["offset"] for i in g.members)
        assert all(b - a <= 1 for a, b in pairwise(offsets))


def test_each_line_embeds_its_first_instance_within_the_budget() -> None:
    instances = [lost(0, o) for o in range(50)] + [lost(1, 10 * o) for o in range(5)]
    lines, shown = burst_lines("lost-write", instances, budget=10, max_lines=4)
    assert [(b["count"], b["shown"]) for b in lines] == [(50, 7), (1, 1), (1, 1), (1, 1)]
    assert [b["first"] for b in lines] == [0, 7, 8, 9]
    assert shown == [*range(7), 50, 51, 52]


def test_section_counts_stay_the_checkers() -> None:
    results = {
        "anomalies": {"lost-write": [lost(2, o) for o in range(113, 154)] + [lost(5, 0)]},
        "stats": {"anomaly_counts": {"lost-write": 60}},
    }
    (section,) = anomaly_sections(results)
    assert section["count"] == anomaly_counts(results)["lost-write"] == 60
    assert [b["count"] for b in section["bursts"]] == [41, 1]
    assert section["stored"] == 42 and section["unlisted"] == 0
    assert len(section["instances"]) == 42
