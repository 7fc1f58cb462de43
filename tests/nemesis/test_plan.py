"""Fault plans: schedule files, the faults a history shows, pinned replays."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from history import read_ops
from history.op import Op
from nemesis.package import KINDS, build
from nemesis.partition import given_grudge, pin_partition
from nemesis.plan import FaultPlan, PlanError, PlannedFault, applied, load, parse

CORPUS = Path(__file__).parents[1] / "data" / "histories"

SCHEDULE = """\
faults:
  - {at: 5, fault: kill, target: controller, duration: 6}
  - {at: 2, fault: partition, target: {kind: isolate-leader, key: 3}, duration: 4}
  - {at: 9, fault: pause, target: [n1, n2]}
  - {at: 12, fault: clock, target: {targets: one, delta_ms: -2000}, duration: 3}
  - {at: 20, fault: lose-unfsynced, target: {leader-of-key: 0}}
"""


def test_a_schedule_file_becomes_ops_at_their_seconds(tmp_path: Path) -> None:
    path = tmp_path / "s.yml"
    path.write_text(SCHEDULE)
    plan = load(path, KINDS)
    assert plan.names == ["partition", "kill", "pause", "clock", "lose-unfsynced"]
    timeline = [(t, op["f"], op.get("value")) for t, op in plan.timeline(KINDS)]
    assert timeline == [
        (2.0, "start-partition", {"kind": "isolate-leader", "key": 3}),
        (5.0, "kill", "controller"),
        (6.0, "stop-partition", None),
        (9.0, "pause", ["n1", "n2"]),  # no duration: until the final heal
        (11.0, "start", "all"),
        (12.0, "bump-clock", {"targets": "one", "delta_ms": -2000}),
        (15.0, "reset-clock", "all"),
        (20.0, "lose-unfsynced", {"leader-of-key": 0}),
    ]
    assert parse(yaml.safe_load(plan.to_yaml()), KINDS, "again") == plan


def test_a_package_runs_its_plan_within_the_time_limit(tmp_path: Path) -> None:
    path = tmp_path / "s.yml"
    path.write_text(SCHEDULE)
    package = build("none", seed=1, plan=load(path, KINDS))
    assert package.names == ["partition", "kill", "pause", "clock", "lose-unfsynced"]
    assert [t for t, _ in package.schedule(12)] == [2.0, 5.0, 6.0, 9.0, 11.0]
    assert {op["f"] for op in package.final_ops()} >= {"start", "resume", "stop-partition"}


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("- 1", "expected a mapping with a list `faults`"),
        ("faults: []\nextra: 1", "unknown key"),
        ("faults: [{at: 1, fault: explode}]", "fault 1: unknown fault 'explode'"),
        ("faults: [{fault: kill}]", "fault 1: `at`"),
        ("faults: [{at: -1, fault: kill}]", "must not be negative"),
        ("faults: [{at: x, fault: kill}]", "must be a number"),
        ("faults: [{at: 1, fault: kill, duration: .inf}]", "must be a number"),
        ("faults: [{at: 1, fault: kill, when: 2}]", "unknown key"),
        ("faults: [{at: 1, fault: lose-unfsynced, duration: 2}]", "one-shot"),
        ("faults: [{at: 1, fault: kill, target: 7}]", "target: not a node spec"),
        ("faults: [{at: 1, fault: partition, target: everyone}]", "unknown partition kind"),
        ("faults: [{at: 1, fault: clock, target: one}]", "expected a mapping"),
        ("faults: [{at: 1, fault: kill, target: controler}, {at: 2}]", "fault 2"),
        ("faults: [{at: 1, fault: clock, target: {delta_ms: x}}]", "delta_ms must be a number"),
        ("faults: [{at: 1}, {at: 1, fault: kill}]", "fault 1: unknown fault None"),
        ("faults: [{at: 1, fault: [kill]}]", r"unknown fault \['kill'\]"),
        ("faults: [{1: x, at: 1, fault: kill, target: one}]", "unknown key"),
        ("faults: [{at: 1, fault: kill}]", "`target` is missing"),
        ("faults: [{at: 1, fault: kill, target: {leader-of-key: -3}}]", "not a node spec"),
        ("faults: [{at: 1, fault: partition, target: {kind: isolate-leader, key: x}}]", "key must"),
        ("faults: [{at: 1, fault: clock, target: {delta_ms: .inf}}]", "must be finite"),
        ("faults: [\n", "line 2"),
    ],
)
def test_a_bad_schedule_names_file_and_fault(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "bad.yml"
    path.write_text(text)
    with pytest.raises(PlanError, match=error) as e:
        load(path, KINDS)
    assert str(path) in str(e.value)


def test_targets_naming_nodes_the_cluster_has_not_are_refused() -> None:
    plan = parse(
        yaml.safe_load(
            "faults:\n  - {at: 1, fault: kill, target: controller}\n"
            "  - {at: 2, fault: pause, target: controler}\n"
            "  - {at: 3, fault: partition, target: {kind: one, grudge: {n1: [n7]}}}"
        ),
        KINDS,
        "s.yml",
    )
    nodes = ["n1", "n2", "n3"]
    with pytest.raises(PlanError, match=r"fault 2 \(pause at 2 s\): unknown node\(s\) controler"):
        plan.check_nodes(KINDS, nodes, "s.yml")
    with pytest.raises(PlanError, match=r"fault 1 \(partition at 3 s\): grudge names .* n7"):
        FaultPlan(plan.faults[2:]).check_nodes(KINDS, nodes, "s.yml")
    FaultPlan(plan.faults[:1]).check_nodes(KINDS, nodes, "s.yml")  # a role: no name to check


def ops(*events: tuple[float, str, str, object]) -> list[Op]:
    return [
        Op(i, int(t * 1e9), kind, "nemesis", f, value, {"error": "x"} if value == "crash" else {})
        for i, (t, kind, f, value) in enumerate(events)
    ]


def test_the_faults_of_a_history_with_targets_meant_and_resolved() -> None:
    history = ops(
        (1.0, "invoke", "kill", "one"),
        (1.2, "info", "kill", {"killed": ["n2"]}),
        (2.0, "invoke", "start-partition", "majority"),
        (2.1, "info", "start-partition", {"kind": "majority", "grudge": {"n1": ["n3"]}}),
        (4.5, "invoke", "start", "all"),
        (6.0, "info", "start", {"started": ["n2"]}),
        (7.0, "invoke", "pause", "controller"),
        (7.0, "info", "pause", "crash"),
        (30.0, "invoke", "stop-partition", None),  # the final heal
        (30.1, "info", "stop-partition", "network healed"),
    )
    plan = applied(history, KINDS, time_limit=30)
    assert plan.faults == (
        PlannedFault(1.0, "kill", "one", 3.5, {"killed": ["n2"]}),
        PlannedFault(2.0, "partition", "majority", None, history[3].value),
        PlannedFault(7.0, "pause", "controller", None, None),
    )
    pinned = plan.pinned(KINDS)
    assert [f.target for f in pinned.faults] == [
        ["n2"],
        {"kind": "majority", "grudge": {"n1": ["n3"]}},
        "controller",  # a role, asked afresh; and this one never resolved
    ]
    assert all(f.resolved is None for f in pinned.faults)


def test_a_fault_whose_completion_never_came_is_kept() -> None:
    plan = applied(ops((1.0, "invoke", "kill", "one")), KINDS, time_limit=30)
    assert plan.faults == (PlannedFault(1.0, "kill", "one", None, None),)


def test_the_recorded_corpus_histories_give_their_faults() -> None:
    hw = applied(read_ops(CORPUS / "nightly/bug-hw-truncation/history.parquet"), KINDS, 30)
    assert [(f.at, f.fault, f.target, f.duration) for f in hw.faults] == [
        (5.301, "kill", "all", 9.048)
    ]
    assert hw.faults[0].resolved == {"killed": ["n1", "n2", "n3"]}
    for path in CORPUS.glob("*/*/history.parquet"):
        history = list(read_ops(path))
        plan = applied(history, KINDS)
        starts = {k.start_f for k in KINDS.values()}
        done = {}  # each start's time → its completion, as the nemesis recorded it
        for i, o in enumerate(history):
            if o.process == "nemesis" and o.type == "invoke" and o.f in starts:
                after = next(c for c in history[i + 1 :] if c.process == "nemesis")
                done[round(o.time / 1e9, 3)] = (o.value, None if after.extra else after.value)
        assert {f.at: (f.target, f.resolved) for f in plan.faults} == done, path


def test_roles_stay_and_random_partitions_pin_to_their_grudge() -> None:
    grudge = {"kind": "majority", "grudge": {"n1": ["n2", "n3"]}}
    assert pin_partition("majority", grudge) == grudge
    assert pin_partition("isolate-leader", {"kind": "isolate-leader", "grudge": {}}) == (
        "isolate-leader"
    )
    clients = {"kind": "clients", "cut": ["n3"], "client": "198.18.0.1"}
    assert pin_partition("clients", clients) == {"kind": "clients", "targets": ["n3"]}
    assert given_grudge({"n1": ["n2", "n3"]}, ["n1", "n2", "n3"]) == {
        "n1": frozenset({"n2", "n3"}),
        "n2": frozenset(),
        "n3": frozenset(),
    }
    with pytest.raises(ValueError, match="unknown node"):
        given_grudge({"n1": ["n9"]}, ["n1", "n2"])


def test_an_empty_plan_is_no_fault() -> None:
    assert FaultPlan().names == [] and FaultPlan().timeline(KINDS) == []
    assert build("none", seed=1, plan=FaultPlan()).schedule(30) == []
