"""The driver-side graph code on hand-made graphs: realtime reduction, process
edges, SCC-based cycle search per anomaly spec, and the verdict rules."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from checkers.cycles.edges import EMPTY_WW, PROCESS, REALTIME, WR, WW
from checkers.cycles.graph import Graph, build_graph, realtime_edges
from checkers.cycles.search import find_cycles
from checkers.result import allowed_kinds, verdict


@st.composite
def intervals(draw) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ops as (invoke position, completion position) on one history timeline."""
    n = draw(st.integers(1, 12))
    events = draw(st.permutations(list(range(n)) * 2))
    inv, comp = np.full(n, -1), np.full(n, -1)
    for pos, op in enumerate(events):
        if inv[op] < 0:
            inv[op] = pos
        else:
            comp[op] = pos
    ok = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    return inv, comp, ok


@settings(max_examples=200, deadline=None)
@given(intervals())
def test_realtime_edges_are_the_transitive_reduction(ops) -> None:
    inv, comp, ok = ops
    n = len(inv)
    full = {(a, b) for a in range(n) for b in range(n) if ok[a] and comp[a] < inv[b]}
    src, dst = realtime_edges(inv, comp, ok)
    got = set(zip(src.tolist(), dst.tolist(), strict=True))
    implied = {(a, b) for a, c in full for c2, b in full if c == c2}
    assert got == full - implied


def _graph(n: int, edges: list[tuple[int, int, int]]) -> Graph:
    ops = pa.table(
        {
            "index": pa.array(range(n), pa.int64()),
            "invoke_index": pa.array(range(n), pa.int64()),
            "type": ["ok"] * n,
            "process": [str(i) for i in range(n)],
            "time": pa.array(range(n), pa.int64()),
            "invoke_time": pa.array(range(n), pa.int64()),
            "f": ["txn"] * n,
        }
    )
    src = np.array([e[0] for e in edges], np.int64)
    dst = np.array([e[1] for e in edges], np.int64)
    rel = np.array([e[2] for e in edges], np.uint8)
    order = np.argsort(src * n + dst)
    return Graph(ops, src[order], dst[order], rel[order], EMPTY_WW, EMPTY_WW)


def test_pure_ww_cycle_is_g0_only() -> None:
    report = find_cycles(_graph(3, [(0, 1, WW), (1, 2, WW), (2, 0, WW)]))
    assert report.counts == {"G0": 1}
    (cyc,) = report.cycles
    assert [s["rel"] for s in cyc["steps"]] == ["ww"] * 3
    assert [s["from"]["index"] for s in cyc["steps"]] == [0, 1, 2]


def test_pure_wr_cycle_fails_and_mixed_one_needs_ww() -> None:
    pure = find_cycles(_graph(2, [(0, 1, WR), (1, 0, WR)]))
    assert pure.counts == {"G1c": 1} and pure.pure_counts == {"G1c": 1}
    mixed = find_cycles(_graph(2, [(0, 1, WR), (1, 0, WW)]))
    assert mixed.counts == {"G1c": 1} and mixed.pure_counts == {}
    assert mixed.cycles[0]["needs_ww"]
    assert find_cycles(_graph(2, [(0, 1, WR), (1, 0, WW)]), ww_deps=False).counts == {}


def test_process_and_realtime_variants() -> None:
    assert find_cycles(_graph(2, [(0, 1, PROCESS), (1, 0, WW)])).counts == {"G0-process": 1}
    rt = find_cycles(_graph(2, [(0, 1, REALTIME), (1, 0, WR)]))
    assert rt.counts == {"G1c-realtime": 1} and rt.pure_counts == {"G1c-realtime": 1}
    both = find_cycles(_graph(3, [(0, 1, WR | PROCESS), (1, 2, REALTIME), (2, 0, WR)]))
    assert "G1c-realtime" in both.counts


def test_shortest_cycle_is_reported() -> None:
    ring = [(i, (i + 1) % 6, WW) for i in range(6)] + [(3, 0, WW)]
    (cyc,) = find_cycles(_graph(6, ring)).cycles
    assert len(cyc["steps"]) == 4


def test_timeout_gives_unknown_never_valid() -> None:
    report = find_cycles(_graph(2, [(0, 1, WW), (1, 0, WW)]), timeout_s=-1)
    assert report.timeouts and not report.cycles
    counts = {"cycle-search-timeout": {"total": 1, "allowed": 0}}
    assert verdict(counts, allowed_kinds(counts)) == "unknown"


def test_build_graph_merges_parallel_edges() -> None:
    ops = pa.table(
        {
            "index": pa.array([1, 3, 5], pa.int64()),
            "invoke_index": pa.array([0, 2, 4], pa.int64()),
            "type": ["ok", "ok", "info"],
            "process": ["0", "0", "1"],
            "time": pa.array([1, 3, 5], pa.int64()),
            "invoke_time": pa.array([0, 2, 4], pa.int64()),
            "f": ["send", "poll", "txn"],
        }
    )
    wr = pa.table(
        {
            c: pa.array(v, pa.int64())
            for c, v in {"src": [1], "dst": [3], "key": [7], "value": [9], "offset": [0]}.items()
        }
    )
    g = build_graph(ops, EMPTY_WW, wr)
    edges = dict(zip(zip(g.src.tolist(), g.dst.tolist(), strict=True), g.rel.tolist(), strict=True))
    assert edges[(0, 1)] == WR | PROCESS | REALTIME
    assert edges[(1, 2)] == REALTIME
    assert (0, 2) not in edges  # implied by 0 → 1 → 2
    assert g.detail(0, 1, WR)["value"] == 9


def test_verdict_rules() -> None:
    counts = {
        "int-send-skip": {"total": 2, "allowed": 0},
        "G0": {"total": 1, "allowed": 1},
        "poll-skip": {"total": 2, "allowed": 2},
    }
    allowed = allowed_kinds(counts)
    assert set(allowed) == {"int-send-skip", "G0", "poll-skip"}
    assert verdict(counts, allowed) is True
    counts["poll-skip"]["allowed"] = 1
    assert verdict(counts, allowed_kinds(counts)) is False
    assert all(why for why in allowed.values())
