"""Finding cycles: strongly connected components per anomaly's edge set (scipy),
then a shortest cycle per component with a BFS.

Each spec names the relations a cycle may use and those it must contain. A
component of the spec's subgraph that contains an edge of every required
relation proves such a cycle exists, so the BFS only picks a short witness;
when the time budget runs out first, the component is reported as a search
timeout, which makes the verdict unknown, never valid.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order, connected_components

from checkers.cycles.edges import PROCESS, REALTIME, REL_NAMES, WR, WW
from checkers.cycles.graph import Graph
from checkers.cycles.kinds import SPECS, Spec

WITNESS_TRIES = 4  # candidate edges tried per component, keeping the shortest cycle
MAX_CYCLES = 64  # components searched per spec; the rest are counted only


PRIORITY = (WW, WR, PROCESS, REALTIME)


@dataclass
class CycleReport:
    cycles: list[dict[str, Any]] = field(default_factory=list)
    timeouts: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # components per kind
    pure_counts: dict[str, int] = field(default_factory=dict)


def _bfs_path(n: int, src: np.ndarray, dst: np.ndarray, start: int, goal: int) -> list[int] | None:
    g = csr_matrix((np.ones(len(src), np.int8), (src, dst)), shape=(n, n))
    _, pred = breadth_first_order(g, start, directed=True, return_predecessors=True)
    if goal != start and pred[goal] < 0:
        return None
    path = [goal]
    while path[-1] != start:
        path.append(int(pred[path[-1]]))
    return path[::-1]


def _witness(
    nodes: np.ndarray, es: np.ndarray, ed: np.ndarray, er: np.ndarray, spec: Spec
) -> list[tuple[int, int, int]] | None:
    """A short cycle in one component as (a, b, rel) steps over global node ids.

    Starts from an edge u→v of the first required relation and searches v→u;
    with a second required relation, over two layers (before/after using it).
    """
    local = {int(x): i for i, x in enumerate(nodes)}
    ls = np.fromiter((local[int(x)] for x in es), np.int64, len(es))
    ld = np.fromiter((local[int(x)] for x in ed), np.int64, len(ed))
    n = len(nodes)
    first, rest = spec.required[0], spec.required[1:]
    second = rest[0] if rest else 0
    best: list[tuple[int, int, int]] | None = None
    for e in np.flatnonzero(er & first)[:WITNESS_TRIES]:
        u, v = int(ls[e]), int(ld[e])
        if second:
            has2 = (er & second) != 0
            s = np.concatenate([ls, ls + n])
            d = np.concatenate([np.where(has2, ld + n, ld), ld + n])
            start = v + n if er[e] & second else v
            path = _bfs_path(2 * n, s, d, start, u + n)
        else:
            path = _bfs_path(n, ls, ld, v, u)
        if path is None:
            continue
        steps = [(u, v, int(first))]
        for a, b in itertools.pairwise(path):
            crossed = second and a < n <= b
            la, lb = a % n, b % n
            steps.append((la, lb, int(second) if crossed else 0))
        if best is None or len(steps) < len(best):
            best = [(int(nodes[a]), int(nodes[b]), r) for a, b, r in steps]
    if best is None:
        return None
    return best


def _step_rel(graph_rel: int, fixed: int, allowed: int) -> int:
    if fixed:
        return fixed
    usable = graph_rel & allowed
    return next(r for r in PRIORITY if usable & r)


def find_cycles(graph: Graph, *, ww_deps: bool = True, timeout_s: float = 30.0) -> CycleReport:
    """Searches every spec; ``ww_deps=False`` drops ww edges first."""
    report = CycleReport()
    n = graph.n
    if n == 0 or len(graph.src) == 0:
        return report
    rel = graph.rel if ww_deps else graph.rel & ~np.uint8(WW)
    # Every spec's graph is part of the whole one, so its cycles lie inside
    # the whole graph's strongly connected components: edges between them
    # never need looking at again.
    _, whole = connected_components(
        csr_matrix((np.ones(len(graph.src), np.int8), (graph.src, graph.dst)), shape=(n, n)),
        directed=True,
        connection="strong",
    )
    inside = (whole[graph.src] == whole[graph.dst]) & (rel != 0)
    src, dst, rel = graph.src[inside], graph.dst[inside], rel[inside]
    deadline = time.monotonic() + timeout_s
    covered: dict[Spec, np.ndarray] = {}
    for spec in SPECS:
        mask = (rel & spec.allowed) != 0
        s, d, r = src[mask], dst[mask], rel[mask] & spec.allowed
        if len(s) == 0:
            continue
        pairs = s.astype(np.int64) * n + d  # sorted: the graph keeps edges ordered by (src, dst)
        g = csr_matrix((np.ones(len(s), np.int8), (s, d)), shape=(n, n))
        _, labels = connected_components(g, directed=True, connection="strong")
        sizes = np.bincount(labels)
        internal = labels[s] == labels[d]
        ok = sizes > 1
        for req in spec.required:
            has = np.bincount(labels[s[internal & ((r & req) != 0)]], minlength=len(sizes)) > 0
            ok &= has
        for prior in spec.skip_if:
            if prior in covered:
                hit = np.bincount(labels, weights=covered[prior], minlength=len(sizes)) > 0
                ok &= ~hit
        comps = np.flatnonzero(ok)
        cov = ok[labels].astype(float)
        covered[spec] = cov
        if len(comps) == 0:
            continue
        kind = spec.kind.name
        report.counts[kind] = report.counts.get(kind, 0) + len(comps)
        if spec.pure_wr:
            report.pure_counts[kind] = report.pure_counts.get(kind, 0) + len(comps)
        order = np.argsort(labels[s[internal]], kind="stable")
        es, ed, er = s[internal][order], d[internal][order], r[internal][order]
        el = labels[es]
        by_label = np.argsort(labels, kind="stable")
        sorted_labels = labels[by_label]
        for c in comps[:MAX_CYCLES]:
            nodes = by_label[
                np.searchsorted(sorted_labels, c) : np.searchsorted(sorted_labels, c, "right")
            ]
            if time.monotonic() > deadline:
                report.timeouts.append(
                    {"spec": spec.name, "kind": kind, "component_size": len(nodes)}
                )
                continue
            lo, hi = np.searchsorted(el, c), np.searchsorted(el, c, side="right")
            steps = _witness(nodes, es[lo:hi], ed[lo:hi], er[lo:hi], spec)
            if steps is None:
                report.timeouts.append(
                    {"spec": spec.name, "kind": kind, "component_size": len(nodes)}
                )
                continue
            cycle = []
            for a, b, fixed in steps:
                e = np.searchsorted(pairs, a * n + b)
                step_rel = _step_rel(int(r[e]), fixed, spec.allowed)
                cycle.append(
                    {
                        "from": graph.op(a),
                        "to": graph.op(b),
                        "rel": REL_NAMES[step_rel],
                        **graph.detail(a, b, step_rel),
                    }
                )
            report.cycles.append(
                {
                    "kind": kind,
                    "pure_wr": spec.pure_wr,
                    "needs_ww": any(st["rel"] == "ww" for st in cycle),
                    "component_size": len(nodes),
                    "steps": cycle,
                }
            )
    return report
