from __future__ import annotations

import random

import pytest

from nemesis.targets import TargetError, resolve

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
