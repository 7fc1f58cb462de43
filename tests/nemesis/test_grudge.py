"""Grudges are pure: properties over random node lists and seeds."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from nemesis import grudge as g

node_lists = st.integers(min_value=2, max_value=9).map(lambda n: [f"n{i}" for i in range(1, n + 1)])
seeds = st.integers(min_value=0, max_value=2**32)


def sees(grudge: g.Grudge, node: str, nodes: list[str]) -> set[str]:
    """Nodes a node can hold a TCP connection with (itself included)."""
    blocked = g.blocked_pairs(grudge)
    return {m for m in nodes if m == node or frozenset((node, m)) not in blocked}


@given(node_lists.filter(lambda ns: len(ns) >= 3), seeds)
def test_one_isolates_exactly_one_node(nodes: list[str], seed: int) -> None:
    grudge = g.one(nodes, random.Random(seed))
    loners = [n for n in nodes if sees(grudge, n, nodes) == {n}]
    assert len(loners) == 1
    for n in nodes:
        if n not in loners:
            assert sees(grudge, n, nodes) == set(nodes) - set(loners)


@given(node_lists, seeds)
def test_majority_split_is_clean(nodes: list[str], seed: int) -> None:
    grudge = g.majority_split(nodes, random.Random(seed))
    small, large = len(nodes) // 2, len(nodes) - len(nodes) // 2
    views = {frozenset(sees(grudge, n, nodes)) for n in nodes}
    assert sorted(len(v) for v in views) == [small, large]
    assert frozenset().union(*views) == frozenset(nodes)


@given(node_lists, seeds)
def test_complete_grudges_are_symmetric(nodes: list[str], seed: int) -> None:
    rng = random.Random(seed)
    for grudge in (g.one(nodes, rng), g.majority_split(nodes, rng), g.bridge(nodes, rng)):
        for dst, srcs in grudge.items():
            for src in srcs:
                assert dst in grudge[src]


@given(st.integers(min_value=3, max_value=9), seeds)
def test_majorities_ring_every_node_sees_a_distinct_majority(n: int, seed: int) -> None:
    nodes = [f"n{i}" for i in range(1, n + 1)]
    grudge = g.majorities_ring(nodes, random.Random(seed))
    assert set(grudge) == set(nodes)
    views = [frozenset(nodes) - grudge[x] for x in nodes]
    assert all(len(v) == g.majority(n) for v in views)
    assert all(x in v for x, v in zip(nodes, views, strict=True))
    assert len(set(views)) == n


def test_majorities_ring_of_five_is_the_perfect_ring() -> None:
    nodes = ["a", "b", "c", "d", "e"]
    grudge = g.majorities_ring(nodes, random.Random(7))
    for x in nodes:
        assert len(grudge[x]) == 2
        for y in grudge[x]:
            assert x in grudge[y]  # symmetric for odd sizes


@given(node_lists, seeds)
def test_bridge_keeps_one_node_connected_to_all(nodes: list[str], seed: int) -> None:
    grudge = g.bridge(nodes, random.Random(seed))
    hubs = [n for n in nodes if sees(grudge, n, nodes) == set(nodes)]
    if len(nodes) >= 3:
        assert len(hubs) == 1
        others = [n for n in nodes if n not in hubs]
        # Without the hub the rest are split in two sides that cannot talk.
        assert any(len(sees(grudge, n, nodes)) < len(nodes) for n in others)


@given(node_lists, seeds)
def test_minority_third_cuts_fewer_than_a_third(nodes: list[str], seed: int) -> None:
    grudge = g.minority_third(nodes, random.Random(seed))
    cut = [n for n in nodes if len(sees(grudge, n, nodes)) * 3 < len(nodes)]
    assert len(cut) * 3 < len(nodes)
    if len(nodes) <= 3:
        assert not g.blocked_pairs(grudge)
    else:
        assert cut


@given(node_lists, seeds)
def test_invert_twice_is_identity(nodes: list[str], seed: int) -> None:
    grudge = g.majority_split(nodes, random.Random(seed))
    assert g.invert(g.invert(grudge, nodes), nodes) == {n: grudge[n] for n in nodes}


def test_isolate_targets_together() -> None:
    grudge = g.isolate(["n1", "n2", "n3", "n4"], ["n2", "n4"])
    assert g.blocked_pairs(grudge) == {
        frozenset(p) for p in [("n1", "n2"), ("n1", "n4"), ("n3", "n2"), ("n3", "n4")]
    }
