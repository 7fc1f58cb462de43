"""Unseen messages: acknowledged sends no OK poll ever returned."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from checkers.kind import Case, Kind, PerKey
from checkers.queue.key_log import OK, KeyLog, find
from checkers.queue.timeline import Timeline
from checkers.wording import at_offset, op_name

SHOWN = 8


def unseen(kl: KeyLog) -> Iterator[Case]:
    """Messages acknowledged to a producer (OK sends) that no OK poll returned by
    the end of the history, one instance per key.

    Unlike a lost write, nothing proves these were skipped: they may only be
    very late. The final polls exist to drain them, so by the end any left are
    an error.
    """
    rows = np.flatnonzero(kl.is_send & (kl.type == OK) & ~kl.was_ok_read(kl.value))
    if len(rows) == 0:
        return
    # unknown offsets first, as Spark sorts nulls
    order = np.lexsort((kl.index[rows], kl.value[rows], kl.offset[rows], kl.has_offset[rows]))
    yield {
        "key": kl.key,
        "count": len(rows),
        "messages": [
            {"offset": kl.offset_at(int(r)), "value": int(kl.value[r]), "writer": kl.op_ref(int(r))}
            for r in rows[order][:SHOWN]
        ],
    }


def unseen_deltas(kl: KeyLog, timeline: Timeline) -> tuple[np.ndarray, np.ndarray]:
    """(bucket, change) of this key's count of acknowledged messages not yet
    polled, summed per bucket of ``timeline``.

    A message counts from its send's completion until the first OK poll that
    returned it completes (not at all if that poll came first).
    """
    sends = np.flatnonzero(kl.is_send & (kl.type == OK))
    reads = kl.ok_polls
    order = np.lexsort((kl.time[reads], kl.value[reads]))
    rv, rt = kl.value[reads][order], kl.time[reads][order]
    first = np.r_[True, rv[1:] != rv[:-1]] if len(rv) else np.empty(0, bool)
    rv, rt = rv[first], rt[first]
    sent = kl.time[sends]
    at = find(rv, kl.value[sends])
    read = at >= 0
    seen = np.where(read, rt[np.maximum(at, 0)] if len(rv) else 0, 0)
    live = ~read | (seen > sent)
    buckets = np.r_[timeline.bucket_of(sent[live]), timeline.bucket_of(seen[live & read])]
    change = np.r_[np.ones(int(live.sum()), np.int64), -np.ones(int((live & read).sum()), np.int64)]
    b, inverse = np.unique(buckets, return_inverse=True)
    return b, np.bincount(inverse.ravel(), weights=change, minlength=len(b)).astype(np.int64)


def unseen_series(
    deltas: dict[int, dict[int, int]], timeline: Timeline | None
) -> list[dict[str, Any]]:
    """How many acknowledged messages per key were not yet polled, over time:
    ``[{"time": ns, "unseen": {key: count}}, ...]`` one point per bucket of
    ``timeline`` (``None``: an empty history), from ``{bucket: {key: change}}``."""
    if timeline is None:
        return []
    current: dict[int, int] = {}
    series = []
    for b in range(min(deltas, default=0), max(deltas, default=-1) + 1):
        for k, d in deltas.get(b, {}).items():
            current[k] = current.get(k, 0) + d
        series.append(
            {
                "time": timeline.end(b),
                "unseen": {str(k): c for k, c in sorted(current.items())},
            }
        )
    return series


def _explain(c: Case) -> str:
    first = (c.get("messages") or [{}])[0]
    example = (
        f", e.g. {first['value']} sent by {op_name(first.get('writer'))} "
        f"{at_offset(first['offset'])}"
        if first
        else ""
    )
    return (
        f"{c['count']} acknowledged message(s) on key {c['key']} were never returned by any "
        f"OK poll{example}."
    )


UNSEEN = Kind(
    "unseen",
    PerKey(unseen),
    _explain,
    "Messages were acknowledged but no consumer ever read them by the end of the test. "
    "They may be lost, or consumers may be stuck behind them.",
)
