"""What a key's analyses need to know beyond that key's own rows: the op-level
facts of the whole history, gathered on the driver from one collect of the
completed ops and broadcast to the per-key analyses.

* which info ops must have committed (an OK poll saw one of their sends, on
  any key: a transaction is all or nothing);
* each process's assign/subscribe ops, which reset its consumer state;
* which ops saw a key rebalanced, and which logged an offset reset of it;
* the OK poll/txn ops (lag is measured at each, on every key the process
  was assigned);
* the time axis of the figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from checkers.spark.timeline import Timeline

READ_FS = ("poll", "txn")
RESET_FS = ("assign", "subscribe")
GRAPH_FS = ("send", "poll", "txn")
# A process code and an op index in one sortable int64: ops of one process,
# in history order.
PROCESS_SHIFT = 1 << 40


def by_process(pcode: np.ndarray, index: np.ndarray) -> np.ndarray:
    return pcode.astype(np.int64) * PROCESS_SHIFT + index


@dataclass
class Resets:
    """A process's assign/subscribe ops (ok or info), sorted by process then
    index: each opens a new segment of the process's consumer state."""

    at: np.ndarray  # by_process(process, index)
    f: list[str]
    keys: list[list[int]]

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
class Context:
    processes: list[str]  # code → name
    # Info ops an OK poll saw a send of on some key (empty: a key knows only
    # its own; checkers.queue.run fills it in for keys that need more).
    seen_info: np.ndarray
    resets: Resets
    rebalanced: dict[int, np.ndarray]  # key → sorted by_process() of ops that saw it rebalance
    offset_resets: dict[int, dict[int, dict[str, int]]]  # key → op index → first {from, to}
    polls: dict[str, np.ndarray]  # OK poll/txn ops: at (sorted), invoke_time, time
    timeline: Timeline | None
    key_resets: dict[int, np.ndarray] = field(default_factory=dict)
    names: pa.Array = field(default_factory=lambda: pa.array([], pa.string()))

    def __post_init__(self) -> None:
        self.names = pa.array(self.processes, pa.string())
        by_key: dict[int, list[int]] = {}
        for j, keys in enumerate(self.resets.keys):
            for k in set(keys):
                by_key.setdefault(k, []).append(j)
        self.key_resets = {k: np.array(v, np.int64) for k, v in by_key.items()}

    def process_codes(self, names: pa.Array) -> np.ndarray:
        """The codes of process names (all of them in this history)."""
        codes = pc.index_in(names, value_set=self.names)
        return codes.to_numpy(zero_copy_only=False).astype(np.int64)

    def resets_of(self, key: int) -> np.ndarray:
        """Positions (in ``resets``) of the assign/subscribe ops naming ``key``."""
        return self.key_resets.get(key, np.empty(0, np.int64))


def _first_resets(
    index: np.ndarray, logged: list[list[dict[str, int]] | None]
) -> dict[int, dict[int, dict[str, int]]]:
    """Per key and op: the first offset reset the op's consumer logged."""
    out: dict[int, dict[int, dict[str, int]]] = {}
    for i, resets in zip(index.tolist(), logged, strict=True):
        for r in resets or ():
            out.setdefault(int(r["key"]), {}).setdefault(i, {"from": r["from"], "to": r["to"]})
    return out


def build_context(ops: pa.Table, timeline: Timeline | None) -> Context:
    """The context from the completed client ops (:func:`checkers.queue.run.op_table`)."""
    names = pc.unique(ops.column("process")).to_pylist()
    names.sort()
    pcode = pc.index_in(ops.column("process"), value_set=pa.array(names, pa.string()))
    pcode = pcode.to_numpy(zero_copy_only=False).astype(np.int64)
    index = ops.column("index").to_numpy()
    at = by_process(pcode, index)
    f = np.asarray(ops.column("f").to_pylist(), dtype=object)
    typ = np.asarray(ops.column("type").to_pylist(), dtype=object)

    is_reset = np.isin(f, RESET_FS) & np.isin(typ, ("ok", "info"))
    rows = np.flatnonzero(is_reset)
    rows = rows[np.argsort(at[rows], kind="stable")]
    keys = ops.column("keys").take(pa.array(rows)).to_pylist()
    resets = Resets(at[rows], f[rows].tolist(), [k or [] for k in keys])

    rebalanced: dict[int, list[int]] = {}
    rb = ops.column("rebalance_keys")
    for r in np.flatnonzero(pc.fill_null(pc.list_value_length(rb), 0).to_numpy() > 0):
        for k in set(rb[int(r)].as_py()):
            rebalanced.setdefault(k, []).append(int(at[r]))

    polls = np.flatnonzero(np.isin(f, READ_FS) & (typ == "ok"))
    polls = polls[np.argsort(at[polls], kind="stable")]
    invoke = pc.fill_null(ops.column("invoke_time"), ops.column("time")).to_numpy()
    return Context(
        processes=names,
        seen_info=np.empty(0, np.int64),
        resets=resets,
        rebalanced={k: np.sort(np.array(v, np.int64)) for k, v in rebalanced.items()},
        offset_resets=_first_resets(index, ops.column("offset_resets").to_pylist()),
        polls={
            "at": at[polls],
            "invoke_time": invoke[polls],
            "time": ops.column("time").to_numpy()[polls],
        },
        timeline=timeline,
    )


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
