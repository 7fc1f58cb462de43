"""What a key's analyses need to know beyond that key's own rows: the op-level
facts of the whole history, gathered on the driver from the completed ops and
broadcast to the per-key analyses.

* which info ops must have committed (an OK poll saw one of their sends, on
  any key: a transaction is all or nothing);
* each process's assign/subscribe ops, which reset its consumer state;
* which ops saw a key rebalanced, and which logged an offset reset of it;
* the OK poll/txn ops (lag is measured at each, on every key the process
  was assigned);
* the partition ends the final reads reached, and the producers'
  transaction timeout they name;
* the sends the client saw refused inside ops that are info as a whole;
* the time axis of the figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from checkers.queue.timeline import Timeline

TYPES = ("ok", "info", "fail")  # completion types, by code
OK, INFO, FAIL = 0, 1, 2
READ_FS = ("poll", "txn")
RESET_FS = ("assign", "subscribe")
GRAPH_FS = ("send", "poll", "txn")
# A process code and an op index in one sortable int64: ops of one process,
# in history order.
PROCESS_SHIFT = 1 << 40
# An op index and a micro-op index in one sortable int64.
MOP_SHIFT = 1 << 20


def mop_code(index: np.ndarray, mop_index: np.ndarray) -> np.ndarray:
    return index.astype(np.int64) * MOP_SHIFT + mop_index


def by_process(pcode: np.ndarray, index: np.ndarray) -> np.ndarray:
    return pcode.astype(np.int64) * PROCESS_SHIFT + index


@dataclass
class Resets:
    """A process's assign/subscribe ops (ok or info), sorted by process then
    index: each opens a new segment of the process's consumer state."""

    at: np.ndarray  # by_process(process, index)
    f: list[str]

    def segment(self, at: np.ndarray) -> np.ndarray:
        """For op positions ``at`` (:func:`by_process`): the reset that opened
        their segment (its position in these arrays), or -1 before a process's
        first reset."""
        if len(self.at) == 0:
            return np.full(len(at), -1, np.int64)
        j = np.searchsorted(self.at, at, side="right") - 1
        same = (j >= 0) & (self.at[np.maximum(j, 0)] // PROCESS_SHIFT == at // PROCESS_SHIFT)
        return np.where(same, j, -1)


@dataclass
class Ops:
    """Every completed client op's op-level fields, by code, sorted by index:
    a key's rows carry only their op's index and look the rest up here (each
    Python worker holds a copy, so it is kept to 31 bytes an op: wider rows
    would cost the shuffle more)."""

    index: np.ndarray
    process: np.ndarray  # int32 code into Context.processes
    type: np.ndarray  # int8 code into TYPES
    f: np.ndarray  # int16 code into fs
    fs: list[str]
    time: np.ndarray
    invoke_time: np.ndarray

    def rows(self, index: np.ndarray) -> np.ndarray:
        """Positions of the ops with these indices."""
        return np.searchsorted(self.index, index)


@dataclass
class Context:
    processes: list[str]  # code → name, sorted
    ops: Ops
    # Info ops an OK poll saw a send of on some key (empty: a key knows only
    # its own; checkers.queue.run fills it in for keys that need more).
    seen_info: np.ndarray
    resets: Resets
    rebalanced: dict[int, np.ndarray]  # key → sorted by_process() of ops that saw it rebalance
    offset_resets: dict[int, dict[int, dict[str, int]]]  # key → op index → first {from, to}
    polls: dict[str, np.ndarray]  # OK poll/txn ops: at (sorted), invoke_time, time
    timeline: Timeline | None
    key_resets: dict[int, np.ndarray]  # key → positions in resets of the ops naming it
    # key → the ends OK final reads reported, rows of (time, end, high
    # watermark, op index, process code) by time
    final_ends: dict[int, np.ndarray]
    txn_timeout_ns: int | None  # the longest transaction timeout a final read names
    refused: np.ndarray  # mop_code() of the sends refused in an op otherwise info, sorted

    def op_ref(self, index: int) -> dict[str, Any]:
        """A compact reference to the op with this index, as every anomaly
        instance carries it."""
        at = int(self.ops.rows(np.array([index]))[0])
        return {
            "index": index,
            "process": self.processes[self.ops.process[at]],
            "time": int(self.ops.time[at]),
            "type": TYPES[self.ops.type[at]],
            "f": self.ops.fs[self.ops.f[at]],
        }

    def resets_of(self, key: int) -> np.ndarray:
        """Positions (in ``resets``) of the assign/subscribe ops naming ``key``."""
        return self.key_resets.get(key, np.empty(0, np.int64))


def _first_resets(
    index: np.ndarray, logged: pa.ChunkedArray
) -> dict[int, dict[int, dict[str, int]]]:
    """Per key and op: the first offset reset the op's consumer logged."""
    out: dict[int, dict[int, dict[str, int]]] = {}
    some = np.flatnonzero(logged.is_valid().to_numpy(zero_copy_only=False))
    for i, resets in zip(index[some].tolist(), logged.drop_null().to_pylist(), strict=True):
        for r in resets:
            out.setdefault(int(r["key"]), {}).setdefault(i, {"from": r["from"], "to": r["to"]})
    return out


def _final_ends(ops: pa.Table, pcode: np.ndarray) -> dict[int, np.ndarray]:
    """Per key, the ``(time, end, high watermark, op index, process code)``
    each OK op carrying ``ends`` reported, by time."""
    ok = pc.equal(ops.column("type"), "ok").to_numpy(zero_copy_only=False)
    some = np.flatnonzero(ok & ops.column("ends").is_valid().to_numpy(zero_copy_only=False))
    rows: dict[int, list[tuple[int, ...]]] = {}
    taken = pa.array(some)
    times = ops.column("time").take(taken).to_pylist()
    index = ops.column("index").take(taken).to_pylist()
    ends = ops.column("ends").take(taken).to_pylist()
    for t, i, p, reported in zip(times, index, pcode[some].tolist(), ends, strict=True):
        for k, (end, high) in reported:
            rows.setdefault(int(k), []).append((t, end, high, i, p))
    return {k: np.array(sorted(v), np.int64).reshape(-1, 5) for k, v in rows.items()}


def build_context(ops: pa.Table, timeline: Timeline | None) -> Context:
    """The context from the completed client ops (:func:`checkers.queue.run.op_table`)."""
    names = pc.unique(ops.column("process")).to_pylist()
    names.sort()
    pcode = pc.index_in(ops.column("process"), value_set=pa.array(names, pa.string()))
    pcode = pcode.to_numpy(zero_copy_only=False).astype(np.int64)
    index = ops.column("index").to_numpy()
    at = by_process(pcode, index)
    invoke = pc.fill_null(ops.column("invoke_time"), ops.column("time")).to_numpy()
    time = ops.column("time").to_numpy()
    by_index = np.argsort(index, kind="stable")
    f_codes = pc.dictionary_encode(ops.column("f")).combine_chunks()
    type_codes = pc.index_in(ops.column("type"), value_set=pa.array(TYPES))

    def where(fs: tuple[str, ...], types: tuple[str, ...]) -> np.ndarray:
        """Positions of the ops of one of ``fs`` that ended in one of ``types``,
        in process and history order."""
        mask = pc.and_(
            pc.is_in(ops.column("f"), pa.array(fs)), pc.is_in(ops.column("type"), pa.array(types))
        )
        rows = np.flatnonzero(mask.to_numpy(zero_copy_only=False))
        return rows[np.argsort(at[rows], kind="stable")]

    rows = where(RESET_FS, ("ok", "info"))
    resets = Resets(at[rows], ops.column("f").take(pa.array(rows)).to_pylist())

    rebalanced: dict[int, list[int]] = {}
    rb = ops.column("rebalance_keys")
    for r in np.flatnonzero(pc.fill_null(pc.list_value_length(rb), 0).to_numpy() > 0):
        for k in set(rb[int(r)].as_py()):
            rebalanced.setdefault(k, []).append(int(at[r]))

    polls = where(READ_FS, ("ok",))
    return Context(
        processes=names,
        ops=Ops(
            index=index[by_index],
            process=pcode.astype(np.int32)[by_index],
            type=type_codes.to_numpy(zero_copy_only=False).astype(np.int8)[by_index],
            f=f_codes.indices.to_numpy().astype(np.int16)[by_index],
            fs=f_codes.dictionary.to_pylist(),
            time=time[by_index],
            invoke_time=invoke[by_index],
        ),
        seen_info=np.empty(0, np.int64),
        resets=resets,
        rebalanced={k: np.sort(np.array(v, np.int64)) for k, v in rebalanced.items()},
        offset_resets=_first_resets(index, ops.column("offset_resets")),
        polls={
            "at": at[polls],
            "invoke_time": invoke[polls],
            "time": time[polls],
        },
        timeline=timeline,
        key_resets=_key_resets(ops.column("keys").take(pa.array(rows))),
        final_ends=_final_ends(ops, pcode),
        txn_timeout_ns=None
        if (t := pc.max(ops.column("txn_timeout_ms")).as_py()) is None
        else int(t) * 1_000_000,
        refused=_refused(index, ops.column("refused")),
    )


def _refused(index: np.ndarray, refused: pa.ChunkedArray) -> np.ndarray:
    """:func:`mop_code` of every send an op names refused, sorted (an index
    no op's micro-ops reach names nothing)."""
    lists = refused.combine_chunks()
    mops = pc.list_flatten(lists).to_numpy(zero_copy_only=False)
    ops = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
    kept = mops < MOP_SHIFT
    return np.sort(mop_code(index[ops[kept]], mops[kept]))


def _key_resets(keys: pa.ChunkedArray) -> dict[int, np.ndarray]:
    """Per key, the positions (in ``keys``) of the lists naming it, ascending."""
    flat = keys.combine_chunks()
    named = pc.list_flatten(flat).to_numpy(zero_copy_only=False)
    at = pc.list_parent_indices(flat).to_numpy(zero_copy_only=False)
    pairs = np.unique(np.stack([named, at], axis=1).astype(np.int64), axis=0)
    if len(pairs) == 0:
        return {}
    starts = np.flatnonzero(np.r_[True, pairs[1:, 0] != pairs[:-1, 0]])
    ends = np.r_[starts[1:], len(pairs)]
    return {int(pairs[s, 0]): pairs[s:e, 1] for s, e in zip(starts, ends, strict=True)}


def op_stats(ops: pa.Table) -> tuple[dict[str, Any], Timeline | None]:
    """Op counts by function and type, and the history's time axis."""
    by_f: dict[str, dict[str, int]] = {}
    counts = ops.group_by(["f", "type"]).aggregate([("index", "count")])
    for f, t, n in zip(
        counts.column("f").to_pylist(),
        counts.column("type").to_pylist(),
        counts.column("index_count").to_pylist(),
        strict=True,
    ):
        by_f.setdefault(f, {})[t] = int(n)
    timeline = None
    if ops.num_rows:
        times = ops.column("time")
        timeline = Timeline.over(pc.min(times).as_py(), pc.max(times).as_py())
    return {"ops": ops.num_rows, "ops_by_f": by_f}, timeline
