"""The fault lanes of the timeline and the plots (which nodes each fault hit,
and what it did) and the final phase."""

from __future__ import annotations

import pytest

from reports.pairs import Fault
from reports.timeline import fault_lanes, fault_nodes, final_phase

CUT = "\u27c2"


@pytest.mark.parametrize(
    ("value", "nodes", "label"),
    [
        ({"killed": ["n2"]}, ["n2"], "n2"),
        ({"paused": ["n3", "n1"]}, ["n1", "n3"], "n1 n3"),
        ({"nodes": ["n1"], "delta_ms": -250.5, "flips": 4}, ["n1"], "n1 -250.5 ms"),
        ({"nodes": ["n2"], "truncated": {"n2": {}}}, ["n2"], "n2"),
        ({"targets": "minority", "cut": ["n3"], "client": "10.0.0.9"}, ["n3"], f"clients {CUT} n3"),
        ({"kind": "clients", "targets": ["n3"]}, ["n3"], "n3"),  # a replayed start, unfinished
        # a clean split, as the partition nemesis records its grudge: written once
        (
            {"kind": "majority", "grudge": {"n1": ["n2", "n3"], "n2": ["n1"], "n3": ["n1"]}},
            ["n1", "n2", "n3"],
            f"n1 {CUT} n2 n3",
        ),
        ({"n1": ["n2", "n3"]}, ["n1", "n2", "n3"], f"n1 {CUT} n2 n3"),  # a bare grudge
        # a bridge: n3 sees both sides and is not hit
        (
            {
                "grudge": {
                    "n1": ["n4", "n5"],
                    "n2": ["n4", "n5"],
                    "n4": ["n1", "n2"],
                    "n5": ["n1", "n2"],
                }
            },
            ["n1", "n2", "n4", "n5"],
            f"n1 n2 {CUT} n4 n5",
        ),
        # one-sided: n3 drops nothing
        ({"n1": ["n2", "n3"], "n2": ["n1"]}, ["n1", "n2", "n3"], f"n1 {CUT} n2 n3; n2 {CUT} n1"),
        ("majority", [], "majority"),
        (None, [], ""),
    ],
)
def test_the_nodes_a_fault_hit(value: object, nodes: list[str], label: str) -> None:
    assert fault_nodes(value) == (nodes, label)


def test_one_lane_per_fault_kind_in_order_of_first_use() -> None:
    faults = [
        Fault("kill", "kill", 1.0, 2.0, {"killed": ["n1"]}),
        Fault("partition", "start-partition", 3.0, None, {"grudge": {"n1": ["n2"]}}),
        Fault("kill", "kill", 5.0, 6.0, {"killed": ["n3"]}),
        Fault("disk", "lose-unfsynced", 7.0, 7.0, "?"),
    ]
    lanes = fault_lanes(faults)
    assert [lane["kind"] for lane in lanes] == ["kill", "partition", "disk"]
    assert [f["nodes"] for f in lanes[0]["faults"]] == [["n1"], ["n3"]]
    assert lanes[1]["faults"][0] | {"value": None} == {
        "kind": "partition",
        "f": "start-partition",
        "start": 3.0,
        "end": None,
        "value": None,
        "nodes": ["n1", "n2"],
        "label": f"n1 {CUT} n2",
        "title": f"partition: n1 {CUT} n2",
    }
    assert lanes[2]["faults"][0]["label"] == "?"


def test_a_fault_title_says_what_it_did_then_the_nodes() -> None:
    grudge = {"n2": ["n1", "n3"], "n1": ["n2"], "n3": ["n2"]}
    faults = [
        Fault("partition", "start-partition", 1.0, 2.0, {"kind": "majority", "grudge": grudge}),
        Fault("kill", "kill", 1.5, None, {"killed": ["n3"]}),
        Fault("partition", "start-partition", 3.0, 4.0, {"kind": "clients", "cut": ["n1"]}),
        Fault("clock", "bump-clock", 5.0, 6.0, {"nodes": ["n1", "n2"], "offset_ms": 300}),
        Fault("partition", "start-partition", 7.0, 8.0, "majority"),  # an unfinished start
        Fault("other", "start-odd", 9.0, 9.5, {"what": "no nodes"}),
        Fault("partition", "start-partition", 10.0, 11.0, {"n1": ["n2", "n3"]}),
    ]
    got = [(f["title"], f["label"]) for lane in fault_lanes(faults) for f in lane["faults"]]
    assert got == [
        (f"partition majority: n2 {CUT} n1 n3", f"n2 {CUT} n1 n3"),
        (f"partition clients: clients {CUT} n1", f"clients {CUT} n1"),
        ("partition majority", "majority"),
        (f"partition: n1 {CUT} n2 n3", f"n1 {CUT} n2 n3"),
        ("kill: n3", "n3"),
        ("bump-clock: n1 n2 +300 ms", "n1 n2 +300 ms"),
        ("odd", '{"what":"no nodes"}'),  # never the raw value in a title
    ]


def test_the_final_phase_begins_at_the_time_limit() -> None:
    assert final_phase({"spec": {"time_limit": 30.0}}, 95.0) == 30.0
    assert final_phase({"spec": {"time_limit": 30.0}}, 29.0) is None  # the history stops sooner
    assert final_phase({}, 95.0) is None
    assert final_phase({"spec": {"time_limit": True}}, 95.0) is None
