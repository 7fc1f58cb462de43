"""Dependency edges between transactions: each key's ww and wr edges come out
of the per-key analyses (``checkers.queue.run``) as Arrow columns.

* ww: the writers of consecutive records of a key's version order;
* wr: the writer of a value → every other op that polled it;
* process: consecutive ops of one process;
* realtime: ``a`` completed before ``b`` was invoked; built on the driver from
  each op's invoke and completion positions as a transitive reduction (see
  :func:`checkers.cycles.graph.realtime_edges`), so it stays linear.

Graph nodes are OK and info send/poll/txn ops; failed ops did not happen.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from checkers.queue.context import GRAPH_FS
from checkers.queue.key_log import FAIL, KeyLog, distinct_pairs

WW, WR, PROCESS, REALTIME = 1, 2, 4, 8
REL_NAMES = {WW: "ww", WR: "wr", PROCESS: "process", REALTIME: "realtime"}
WW_COLUMNS = ("src", "dst", "key", "v1", "v2", "o1", "o2")
WR_COLUMNS = ("src", "dst", "key", "value", "offset")
EMPTY_WW = pa.table({c: pa.array([], pa.int64()) for c in WW_COLUMNS})
EMPTY_WR = pa.table({c: pa.array([], pa.int64()) for c in WR_COLUMNS})


def _distinct_pairs(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Positions of the first edge of each (src, dst) pair, in order."""
    order, new = distinct_pairs(src, dst)
    return np.sort(order[new])


def ww_edges(kl: KeyLog) -> dict[str, np.ndarray]:
    """Writers of consecutive records of the key's version order."""
    writer = kl.writer_rows(kl.by_index)
    a, b = writer[:-1], writer[1:]
    keep = (a >= 0) & (b >= 0)
    keep[keep] = kl.index[a[keep]] != kl.index[b[keep]]
    i = np.flatnonzero(keep)
    src, dst = kl.index[a[i]], kl.index[b[i]]
    first = _distinct_pairs(src, dst)
    i = i[first]
    return {
        "src": src[first],
        "dst": dst[first],
        "v1": kl.by_index[i],
        "v2": kl.by_index[i + 1],
        "o1": kl.offsets[i],
        "o2": kl.offsets[i + 1],
    }


def wr_edges(kl: KeyLog) -> dict[str, np.ndarray]:
    """The committed writer of each value → every other OK or info op that polled it."""
    reads = np.flatnonzero(kl.is_poll & (kl.type != FAIL))
    writer = kl.writer_rows(kl.value[reads])
    keep = writer >= 0
    reads, writer = reads[keep], writer[keep]
    keep = kl.index[writer] != kl.index[reads]
    reads, writer = reads[keep], writer[keep]
    src, dst = kl.index[writer], kl.index[reads]
    first = _distinct_pairs(src, dst)
    return {
        "src": src[first],
        "dst": dst[first],
        "value": kl.value[reads][first],
        "offset": kl.offset[reads][first],
    }


def op_intervals(ops: pa.Table) -> pa.Table:
    """Per graph op: history positions of its invocation and completion, process."""
    graph = pc.and_(
        pc.is_in(ops.column("f"), pa.array(GRAPH_FS)),
        pc.is_in(ops.column("type"), pa.array(["ok", "info"])),
    )
    return ops.filter(graph).select(
        ["index", "invoke_index", "type", "process", "time", "invoke_time", "f"]
    )
