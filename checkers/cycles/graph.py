"""The transaction dependency graph on the driver: dense node ids, one edge per
ordered pair with a bitmask of relations, and the details needed to explain
any edge of a reported cycle."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from checkers.cycles.edges import PROCESS, REALTIME, WR, WW
from checkers.queue.key_log import ranges

CHUNK = 1 << 20  # pairs split into source and destination at a time


def realtime_edges(
    invoke: np.ndarray, complete: np.ndarray, ok: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Transitive reduction of "a completed before b was invoked" over node ids
    ``0..n-1`` (positions in the history; only ``ok`` nodes ever complete).

    ``a → b`` is kept iff ``a`` completed before ``b``'s invocation and no op
    ``c`` both started after ``a`` completed and completed before ``b`` started
    (else ``a → c → b`` already implies it). With ``m(b)`` the latest invocation
    among ops completed before ``b`` started, the kept sources are exactly those
    completing in ``(m(b), invoke(b))``: a handful per op, so this is linear.
    """
    src_ids = np.flatnonzero(ok).astype(np.int32)  # node ids, as the graph keeps them
    order = np.argsort(complete[src_ids], kind="stable")
    src_ids = src_ids[order]
    c_sorted = complete[src_ids]
    if len(src_ids) == 0:
        return np.empty(0, np.int32), np.empty(0, np.int32)
    running_max_inv = np.maximum.accumulate(invoke[src_ids])
    hi = np.searchsorted(c_sorted, invoke, side="left")
    m = np.where(hi > 0, running_max_inv[np.maximum(hi - 1, 0)], -1)
    lo = np.searchsorted(c_sorted, m, side="right")
    counts = np.maximum(hi - lo, 0)
    dst = np.repeat(np.arange(len(invoke), dtype=np.int32), counts)
    return src_ids[ranges(lo, counts)], dst


def process_edges(process: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Consecutive ops of each process, by history position (node ids ordered)."""
    order = np.lexsort((index, process))
    same = process[order][1:] == process[order][:-1]
    return order[:-1][same], order[1:][same]


@dataclass
class Graph:
    """Nodes are ops; ``src``/``dst`` are dense node ids; ``rel`` a bitmask."""

    ops: pa.Table  # per node: index, invoke_index, type, process, time, invoke_time, f
    src: np.ndarray
    dst: np.ndarray
    rel: np.ndarray
    ww: pa.Table
    wr: pa.Table
    _cache: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return self.ops.num_rows

    def op(self, node: int) -> dict[str, Any]:
        return {
            c: self.ops.column(c)[node].as_py() for c in ("index", "process", "time", "type", "f")
        }

    def _ends(self, rel: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The edge table's rows sorted by source (sorted on first use: only
        explaining a cycle needs it), with their sources and destinations."""
        if rel not in self._cache:
            table = self.ww if rel == WW else self.wr
            src, dst = table.column("src").to_numpy(), table.column("dst").to_numpy()
            order = np.argsort(src, kind="stable")
            self._cache[rel] = (order, src[order], dst[order])
        return self._cache[rel]

    def detail(self, a: int, b: int, rel: int) -> dict[str, Any]:
        """What a step of a cycle rests on, as data for the explainer."""
        ia, ib = self.ops.column("index")[a].as_py(), self.ops.column("index")[b].as_py()
        if rel in (WW, WR):
            table = self.ww if rel == WW else self.wr
            order, src, dst_all = self._ends(rel)
            lo = int(np.searchsorted(src, ia))
            hi = int(np.searchsorted(src, ia, side="right"))
            hits = np.flatnonzero(dst_all[lo:hi] == ib)
            if len(hits):
                row = table.slice(int(order[lo + int(hits[0])]), 1).to_pylist()[0]
                return {k: v for k, v in row.items() if k not in ("src", "dst")}
        if rel == PROCESS:
            return {"process": self.op(a)["process"]}
        return {}


def build_graph(ops: pa.Table, ww: pa.Table, wr: pa.Table) -> Graph:
    """Maps op indexes to node ids, adds process and realtime edges, and merges
    parallel edges into one per pair."""
    index = ops.column("index").to_numpy()
    if np.any(index[1:] < index[:-1]):
        ops = ops.sort_by("index")
        index = ops.column("index").to_numpy()
    invoke = pc.fill_null(ops.column("invoke_index"), ops.column("index")).to_numpy()
    ok = pc.equal(ops.column("type"), "ok").to_numpy(zero_copy_only=False)
    proc_codes = pc.dictionary_encode(ops.column("process")).combine_chunks().indices.to_numpy()

    # Each edge as one int64, (src · n + dst) · 16 + relation bit, written
    # into one array and sorted in place: parallel edges end up side by side.
    # A 10M-op history has about 50M edges: each step works in place where
    # it can, and pairs are split into ends a chunk at a time.
    n = max(len(index), 1)
    process = process_edges(proc_codes, index)
    realtime = realtime_edges(invoke, index, ok)
    total = ww.num_rows + wr.num_rows + len(process[0]) + len(realtime[0])
    packed = np.empty(total, np.int64)
    at = 0
    for table, bit in ((ww, WW), (wr, WR)):
        ends = (np.searchsorted(index, table.column(c).to_numpy()) for c in ("src", "dst"))
        at = _pack_into(packed, at, *ends, n, bit)
    at = _pack_into(packed, at, *process, n, PROCESS)
    _pack_into(packed, at, *realtime, n, REALTIME)
    del process, realtime
    packed.sort()
    bits = np.empty(total, np.uint8)
    np.bitwise_and(packed, 15, out=bits, casting="unsafe")
    packed >>= 4  # the (src, dst) pair
    new = np.empty(total, bool)
    new[:1] = True
    np.not_equal(packed[1:], packed[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    del new
    rel = np.bitwise_or.reduceat(bits, starts) if total else np.empty(0, np.uint8)
    del bits
    src, dst = np.empty(len(starts), np.int32), np.empty(len(starts), np.int32)
    for lo in range(0, len(starts), CHUNK):
        pair = packed[starts[lo : lo + CHUNK]]
        src[lo : lo + CHUNK], dst[lo : lo + CHUNK] = np.divmod(pair, n)
    return Graph(ops, src, dst, rel, ww, wr)


def _pack_into(out: np.ndarray, at: int, src: np.ndarray, dst: np.ndarray, n: int, bit: int) -> int:
    """Writes the edges ``src → dst`` packed into ``out`` from ``at`` on, in
    place; returns where they end."""
    part = out[at : at + len(src)]
    np.multiply(src, n, out=part, dtype=np.int64, casting="unsafe")
    part += dst
    part <<= 4
    part |= bit
    return at + len(src)
