"""Partition topologies as pure data (Jepsen's `nemesis.clj` grudges).

A *grudge* maps each node to the set of nodes it refuses to hear from: the
node drops inbound packets from each of them. A grudge is symmetric for clean
splits and asymmetric where the topology is (majorities ring on even sizes).
Every function here is pure; randomness comes in as a `random.Random`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence

Grudge = dict[str, frozenset[str]]


def majority(n: int) -> int:
    """The smallest majority of n nodes."""
    return n // 2 + 1


def bisect(nodes: Sequence[str]) -> list[list[str]]:
    """Two halves, the smaller first."""
    k = len(nodes) // 2
    return [list(nodes[:k]), list(nodes[k:])]


def split_one(nodes: Sequence[str], rng: random.Random) -> list[list[str]]:
    """One random node alone, the rest together."""
    loner = rng.choice(list(nodes))
    return [[loner], [n for n in nodes if n != loner]]


def complete_grudge(components: Iterable[Iterable[str]]) -> Grudge:
    """Every node drops every node outside its own component."""
    comps = [frozenset(c) for c in components]
    everyone = frozenset().union(*comps) if comps else frozenset()
    return {node: everyone - comp for comp in comps for node in comp}


def invert(grudge: Mapping[str, Iterable[str]], nodes: Iterable[str]) -> Grudge:
    """The grudge that drops exactly what `grudge` allows (between distinct nodes)."""
    everyone = frozenset(nodes)
    return {n: everyone - frozenset(grudge.get(n, ())) - {n} for n in everyone}


def one(nodes: Sequence[str], rng: random.Random) -> Grudge:
    """Isolate a single random node."""
    return complete_grudge(split_one(nodes, rng))


def isolate(nodes: Sequence[str], targets: Iterable[str]) -> Grudge:
    """Cut `targets` off (together) from everyone else."""
    cut = [n for n in nodes if n in set(targets)]
    return complete_grudge([cut, [n for n in nodes if n not in set(cut)]])


def majority_split(nodes: Sequence[str], rng: random.Random) -> Grudge:
    """A clean random majority/minority split."""
    shuffled = list(nodes)
    rng.shuffle(shuffled)
    return complete_grudge(bisect(shuffled))


def bridge(nodes: Sequence[str], rng: random.Random) -> Grudge:
    """Two halves joined by one node that still talks to both."""
    shuffled = list(nodes)
    rng.shuffle(shuffled)
    halves = bisect(shuffled)
    hub = halves[1][0]
    grudge = complete_grudge(halves)
    return {n: (frozenset() if n == hub else drops - {hub}) for n, drops in grudge.items()}


def majorities_ring(nodes: Sequence[str], rng: random.Random) -> Grudge:
    """Every node sees a majority, and no two nodes see the same majority.

    Nodes are shuffled onto a ring; each node sees the window of majority(n)
    ring neighbours around it and drops the rest (Jepsen's perfect ring,
    used here for every size; for even sizes the windows are asymmetric).
    """
    ring = list(nodes)
    rng.shuffle(ring)
    n, m = len(ring), majority(len(ring))
    everyone = frozenset(ring)
    grudge: Grudge = {}
    for i in range(n):
        window = [ring[(i + k) % n] for k in range(m)]
        center = window[m // 2]
        grudge[center] = everyone - frozenset(window)
    return grudge


def minority_third(nodes: Sequence[str], rng: random.Random) -> Grudge:
    """Split off strictly fewer than a third of the nodes (none for n ≤ 3,
    as in Jepsen)."""
    shuffled = list(nodes)
    rng.shuffle(shuffled)
    k = math.ceil(len(shuffled) / 3) - 1
    if k == 0:
        return {n: frozenset() for n in shuffled}
    return complete_grudge([shuffled[:k], shuffled[k:]])


#: Grudge kinds that need only the node list and a random source.
GRUDGES = {
    "one": one,
    "majority": majority_split,
    "majorities-ring": majorities_ring,
    "minority-third": minority_third,
    "bridge": bridge,
}


def blocked_pairs(grudge: Mapping[str, Iterable[str]]) -> set[frozenset[str]]:
    """Unordered node pairs that cannot hold a TCP connection under `grudge`
    (a drop in either direction breaks the handshake)."""
    return {frozenset((dst, src)) for dst, srcs in grudge.items() for src in srcs if src != dst}
