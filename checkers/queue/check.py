"""Every analysis of one key, run where the key's rows are (a Spark grouped
map): the case finders, capped per kind, the key's ww and wr edges, and its
share of the figures. The edges come back as their own tables, the rest as
rows of :data:`OUT_SCHEMA`, whose columns ``a``..``d`` carry each row kind's
numbers:

=============  ==============================================================
kind           columns
=============  ==============================================================
an anomaly     ``ord``, ``allowed``, ``case`` (JSON), or a count row
               (``case`` null): ``a`` = total, ``b`` = allowed
``_unseen``    ``a`` bucket, ``b`` change of the key's unseen count
``_lag_p``     ``a`` process code, ``b`` worst lag
``_lag_b``     ``a`` bucket, ``b`` worst lag
``_lag_worst`` ``a`` lag, ``b`` op index, ``c`` process code, ``d`` time
``_info``      ``a`` an info op that sent here, ``b`` 1 if an OK poll here saw it
=============  ==============================================================
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import pyarrow as pa

from checkers.cycles import edges
from checkers.kind import Case, PerKey
from checkers.kinds import KINDS
from checkers.queue import unseen
from checkers.queue.context import Context
from checkers.queue.key_log import KeyLog
from checkers.queue.lag import key_lags

# the kinds each key's analysis finds, in the registry's order
FINDERS: dict[str, Callable[[KeyLog], Iterable[Case]]] = {
    name: kind.finder.find for name, kind in KINDS.items() if isinstance(kind.finder, PerKey)
}

OUT_SCHEMA = pa.schema(
    [
        ("kind", pa.string()),
        ("key", pa.int64()),
        ("ord", pa.int64()),
        ("allowed", pa.bool_()),
        ("case", pa.string()),
        *[(c, pa.int64()) for c in "abcd"],
    ]
)
REF_FIELDS = ("op", "reader", "writer", "max_read")  # an instance's ops, in listing priority


def order_of(case: Case) -> int:
    """What instances of a kind are listed by: the index of the op they name
    first, else their key."""
    for f in REF_FIELDS:
        if f in case:
            return int(case[f]["index"])
    return int(case["key"])


def capped(cases: Iterable[Case], cap: int) -> tuple[list[tuple[bool, int, str]], int, int]:
    """The first ``cap`` cases (not allowed first, then by op, then by text) as
    (allowed, order, JSON), with the total and allowed counts."""
    rows = []
    for case in cases:
        allowed = bool(case.pop("allowed", False))
        rows.append((allowed, order_of(case), orjson.dumps(case).decode()))
    rows.sort()
    return rows[:cap], len(rows), sum(r[0] for r in rows)


class _Rows:
    """Output rows, gathered as Arrow batches."""

    def __init__(self, key: int) -> None:
        self.key = key
        self.batches: list[pa.RecordBatch] = []

    def add(self, kind: str, n: int = 1, **cols: Any) -> None:
        """``n`` rows of ``kind``; each named column gets a list (or array) of
        ``n`` values, the others nulls."""
        arrays = [pa.array([kind] * n, pa.string()), pa.array(np.full(n, self.key, np.int64))]
        for f in list(OUT_SCHEMA)[2:]:
            v = cols.get(f.name)
            arrays.append(pa.nulls(n, f.type) if v is None else pa.array(v, f.type))
        self.batches.append(pa.RecordBatch.from_arrays(arrays, schema=OUT_SCHEMA))

    def table(self) -> pa.Table:
        return pa.Table.from_batches(self.batches, schema=OUT_SCHEMA)


@dataclass
class KeyResults:
    """One key's findings (:data:`OUT_SCHEMA`), and its ww and wr edges
    (columns of :data:`checkers.cycles.edges.WW_COLUMNS` and ``WR_COLUMNS``
    but the key)."""

    rows: pa.Table
    ww: pa.Table
    wr: pa.Table


def analyse_key(table: pa.Table, ctx: Context, cap: int) -> KeyResults:
    """All of one key's findings."""
    kl = KeyLog(table, ctx)
    out = _Rows(kl.key)
    out.add("_key")
    info = kl.info_sent_here
    out.add("_info", len(info), a=info, b=np.isin(info, kl.seen_here).astype(np.int64))
    for kind, finder in FINDERS.items():
        shown, total, n_allowed = capped(finder(kl), cap)
        if not total:
            continue
        out.add(kind, a=[total], b=[n_allowed])
        if shown:
            allowed, order, text = zip(*shown, strict=True)
            out.add(kind, len(shown), allowed=list(allowed), ord=list(order), case=list(text))
    if ctx.timeline is not None:
        b, change = unseen.unseen_deltas(kl, ctx.timeline)
        out.add("_unseen", len(b), a=b, b=change)
        lags = key_lags(kl, ctx.timeline)
        out.add(
            "_lag_p",
            len(lags.by_process),
            a=list(lags.by_process),
            b=list(lags.by_process.values()),
        )
        out.add(
            "_lag_b", len(lags.by_bucket), a=list(lags.by_bucket), b=list(lags.by_bucket.values())
        )
        if lags.worst is not None:
            out.add(
                "_lag_worst",
                a=[lags.worst[0]],
                b=[lags.worst[1]],
                c=[lags.worst[2]],
                d=[lags.worst[3]],
            )
    return KeyResults(out.table(), pa.table(edges.ww_edges(kl)), pa.table(edges.wr_edges(kl)))
