from __future__ import annotations

import contextlib
import random

import pytest

from nemesis.targets import KEY_LEADER, TargetError, check, pin, resolve
from workloads.keys import KeyMap

NODES = ["n1", "n2", "n3", "n4", "n5"]


class FixedRoles:
    def controller(self) -> str:
        return "n4"

    def leader(self, topic: str | None = None, partition: int | None = None) -> str:
        return "n2"

    def leaders(self) -> list[str]:
        return ["n5", "n2"]

    def coordinator(self, kind: str, key: str) -> str:
        return "n3"

    def close(self) -> None:
        pass


@pytest.mark.parametrize(
    ("spec", "size"),
    [("one", 1), ("minority", 2), ("majority", 3), ("minority-third", 1), ("all", 5)],
)
def test_sizes(spec: str, size: int) -> None:
    for seed in range(20):
        chosen = resolve(spec, NODES, random.Random(seed))
        assert len(chosen) == size and set(chosen) <= set(NODES)


def test_random_subset_is_non_empty_and_in_cluster_order() -> None:
    for seed in range(50):
        chosen = resolve(None, NODES, random.Random(seed))
        assert chosen and chosen == [n for n in NODES if n in chosen]


def test_roles_and_explicit() -> None:
    rng = random.Random(0)
    assert resolve("controller", NODES, rng, FixedRoles()) == ["n4"]
    assert resolve("leaders", NODES, rng, FixedRoles()) == ["n2", "n5"]
    assert resolve("n3,n1", NODES, rng) == ["n1", "n3"]
    with pytest.raises(TargetError, match="unknown node"):
        resolve(["n9"], NODES, rng)
    with pytest.raises(TargetError, match="needs a cluster"):
        resolve("leaders", NODES, rng)


def test_some_leaders_are_a_random_non_empty_subset_of_the_leaders() -> None:
    drawn = [resolve("some-leaders", NODES, random.Random(s), FixedRoles()) for s in range(40)]
    assert {tuple(d) for d in drawn} == {("n2",), ("n5",), ("n2", "n5")}
    with pytest.raises(TargetError, match="needs a cluster"):
        resolve("some-leaders", NODES, random.Random(0))
    check("some-leaders", NODES)


class LeadingRoles(FixedRoles):
    def __init__(self, leaders: list[str]) -> None:
        self.leading = leaders

    def leaders(self) -> list[str]:
        return self.leading


def test_some_leaders_of_none_hit_nothing() -> None:
    assert resolve("some-leaders", NODES, random.Random(0), LeadingRoles([])) == []


class SilentRoles(FixedRoles):
    def leaders(self) -> list[str]:
        raise TargetError("no broker answered Metadata")


def test_how_many_lead_does_not_move_later_targets() -> None:
    """Leadership depends on timing, and a lookup may fail; the nodes a
    seed's later faults hit must not."""
    for seed in range(30):
        later = []
        for roles in (*(LeadingRoles(x) for x in (NODES, NODES[:4], ["n3"], [])), SilentRoles()):
            rng = random.Random(seed)
            with contextlib.suppress(TargetError):
                resolve("some-leaders", NODES, rng, roles)
            later.append((resolve("one", NODES, rng), resolve("majority", NODES, rng)))
        assert all(x == later[0] for x in later)


class KeyRoles(FixedRoles):
    """Leads partition 0 of every topic from n1 and partition 1 from n3."""

    def leader(self, topic: str | None = None, partition: int | None = None) -> str:
        assert topic == "jepka-t1"
        return {0: "n1", 1: "n3"}[partition]


def test_the_leader_of_a_key_is_asked_of_its_partition() -> None:
    rng = random.Random(0)
    key_partition = KeyMap().topic_partition
    assert resolve({KEY_LEADER: 3}, NODES, rng, KeyRoles(), key_partition) == ["n3"]
    assert resolve({KEY_LEADER: 2}, NODES, rng, KeyRoles(), key_partition) == ["n1"]
    with pytest.raises(TargetError, match="needs a cluster"):
        resolve({KEY_LEADER: 2}, NODES, rng)


@pytest.mark.parametrize("bad", [3, [], [1], {"leader": 3}, {KEY_LEADER: "3"}, ""])
def test_check_refuses_what_is_no_node_spec(bad: object) -> None:
    with pytest.raises(TargetError, match="not a node spec"):
        check(bad)


def test_pin_keeps_roles_and_pins_random_specs() -> None:
    assert pin("one", ["n2"]) == ["n2"]
    assert pin(None, ["n1", "n3"]) == ["n1", "n3"]
    assert pin("some-leaders", ["n5"]) == ["n5"]
    assert pin("majority", []) == "majority"  # nothing hit: stays as meant
    for role in ("controller", "leaders", {KEY_LEADER: 1}, ["n4"], "all"):
        assert pin(role, ["n2"]) == role
