"""Realtime lag: how far behind the log's known end a consumer's polls were.

Not an anomaly (a slow consumer is not wrong), but the figure that shows stuck
consumers, so reports plot it. Each key measures the OK polls of every
process while it was assigned that key; the driver merges the keys'
maxima.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from checkers.queue.context import PROCESS_SHIFT
from checkers.queue.key_log import NONE, OK, KeyLog, group_bounds, ranges
from checkers.queue.timeline import Timeline

NO_TIME = np.iinfo(np.int64).max
SEGMENT_SHIFT = 1 << 32


def _expired(kl: KeyLog) -> np.ndarray:
    """Per dense index: the earliest time any completed op proved that a record
    at that index or later existed (it polled one, or an OK send was
    acknowledged); ``NO_TIME`` where no op observed that index itself."""
    rows = (kl.idx != NONE) & (kl.is_poll | (kl.type == OK))
    per = np.full(len(kl.offsets), NO_TIME)
    np.minimum.at(per, kl.idx[rows], kl.time[rows])
    suffix = np.minimum.accumulate(per[::-1])[::-1]
    return np.where(per == NO_TIME, NO_TIME, suffix)


def _probes(kl: KeyLog) -> tuple[np.ndarray, np.ndarray]:
    """Positions in ``ctx.polls`` of the OK polls made while this key was
    assigned (in the segment of an assign/subscribe that named it), in
    process and history order, and the reset that opened each one's segment."""
    resets, polls = kl.ctx.resets, kl.ctx.polls["at"]
    mine = kl.ctx.resets_of(kl.key)
    if len(mine) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    lo = resets.at[mine]
    nxt = np.minimum(mine + 1, len(resets.at) - 1)
    same = (mine + 1 < len(resets.at)) & (resets.at[nxt] // PROCESS_SHIFT == lo // PROCESS_SHIFT)
    hi = np.where(same, resets.at[nxt], (lo // PROCESS_SHIFT + 1) * PROCESS_SHIFT)
    start = np.searchsorted(polls, lo, "right")
    n = np.maximum(np.searchsorted(polls, hi, "left") - start, 0)
    return ranges(start, n), np.repeat(mine, n)


@dataclass
class KeyLags:
    """One key's lag maxima: overall, per process code and per bucket, and its
    worst probe (lag, op index, process code, time)."""

    key: int
    by_process: dict[int, int]
    by_bucket: dict[int, int]
    worst: tuple[int, int, int, int] | None


def key_lags(kl: KeyLog, timeline: Timeline) -> KeyLags:
    """The lag of each OK poll on this key, while assigned: its invoke time
    minus the time a record past the process's known position (the highest
    it polled there since its last assign/subscribe, before this op) was
    first proven to exist, floored at 0."""
    ctx = kl.ctx
    probes, p_seg = _probes(kl)
    if len(probes) == 0:
        return KeyLags(kl.key, {}, {}, None)
    p_at = ctx.polls["at"][probes]
    reads = np.flatnonzero(kl.is_poll & (kl.idx != NONE))
    reads = reads[np.argsort(kl.at[reads], kind="stable")]
    r_at, r_seg = kl.at[reads], ctx.resets.segment(kl.at[reads])
    # the highest index read so far in each segment, read by read
    base = r_seg * SEGMENT_SHIFT
    seen = np.maximum.accumulate(base + kl.idx[reads] + 1) - base - 1 if len(reads) else r_seg
    # a probe knows the reads of its segment before its own op
    j = np.searchsorted(r_at, p_at, "left") - 1
    mine = (j >= 0) & (r_seg[np.maximum(j, 0)] == p_seg) if len(reads) else j >= 0
    known = np.where(mine, seen[np.maximum(j, 0)] if len(reads) else -1, -1)
    expired = _expired(kl)
    nxt = np.minimum(known + 1, len(expired))
    exp = np.r_[expired, NO_TIME][nxt]
    lag = np.where(exp == NO_TIME, 0, np.maximum(ctx.polls["invoke_time"][probes] - exp, 0))
    pcode, index = p_at // PROCESS_SHIFT, p_at % PROCESS_SHIFT
    time = ctx.polls["time"][probes]
    worst = np.flatnonzero(lag == lag.max())
    w = worst[np.argmin(index[worst])]  # the earliest op of the highest lag
    return KeyLags(
        kl.key,
        _max_by(pcode, lag),
        _max_by(timeline.bucket_of(time), lag),
        (int(lag[w]), int(index[w]), int(pcode[w]), int(time[w])),
    )


def _max_by(groups: np.ndarray, values: np.ndarray) -> dict[int, int]:
    """The highest value per group."""
    order = np.argsort(groups, kind="stable")
    starts, _ = group_bounds(groups[order])
    highest = np.maximum.reduceat(values[order], starts)
    return dict(zip(groups[order][starts].tolist(), highest.tolist(), strict=True))


def realtime_lag(
    keys: list[KeyLags], processes: list[str], timeline: Timeline | None
) -> dict[str, Any]:
    """Worst lag overall, per key, per process and per bucket of ``timeline``."""
    empty: dict[str, Any] = {"worst": None, "by_key": {}, "by_process": {}, "series": []}
    worst = [(k.worst, k.key) for k in keys if k.worst is not None]
    if timeline is None or not worst:
        return empty
    # highest lag first, then the earliest op, then the highest key
    (lag, index, pcode, time), key = max(worst, key=lambda w: (w[0][0], -w[0][1], w[1]))
    by_process: dict[str, int] = {}
    by_bucket: dict[int, int] = {}
    for k in keys:
        for p, v in k.by_process.items():
            by_process[processes[p]] = max(by_process.get(processes[p], v), v)
        for b, v in k.by_bucket.items():
            by_bucket[b] = max(by_bucket.get(b, v), v)
    return {
        "worst": {
            "lag": lag,
            "op": {"index": index, "process": processes[pcode]},
            "key": key,
            "time": time,
        },
        "by_key": {str(k.key): k.worst[0] for k in keys if k.worst is not None},
        "by_process": by_process,
        "series": [{"time": timeline.end(b), "lag": v} for b, v in sorted(by_bucket.items())],
    }
