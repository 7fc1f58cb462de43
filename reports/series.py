"""Time series for the plots, reduced to a bounded number of points.

A 1M-op history has a million latencies; a browser plot needs a few thousand
points. Downsampling keeps each bucket's extremes (min and max), so spikes and
stalls, which are what a reader looks for under faults, survive the cut.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from reports.pairs import Pairs

MAX_POINTS = 2000  # per series, after downsampling
MAX_SERIES = 16  # per checker-provided plot (one series per key): the highest peaks
BUCKETS = 200  # time buckets for quantiles and throughput
QUANTILES = (0.5, 0.95, 0.99, 1.0)


def downsample(x: np.ndarray, y: np.ndarray, max_points: int = MAX_POINTS) -> np.ndarray:
    """Indices of at most ``max_points`` points of (x, y), x sorted ascending: in each of
    ``max_points // 2`` equal-width x buckets, the points of least and greatest y."""
    n = len(x)
    if n <= max_points:
        return np.arange(n)
    nb = max(1, max_points // 2)
    lo, hi = float(x[0]), float(x[-1])
    width = (hi - lo) / nb or 1.0
    bucket = np.minimum(((x - lo) / width).astype(np.int64), nb - 1)
    starts = np.searchsorted(bucket, np.arange(nb), side="left")
    ends = np.searchsorted(bucket, np.arange(nb), side="right")
    keep: list[int] = []
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        if s == e:
            continue
        seg = y[s:e]
        a, b = s + int(np.argmin(seg)), s + int(np.argmax(seg))
        keep.extend(sorted({a, b}))
    return np.array(keep, dtype=np.int64)


def _groups(pairs: Pairs, done: np.ndarray) -> dict[str, np.ndarray]:
    """Completed rows grouped as ``f type`` (e.g. ``send ok``), each sorted by completion."""
    keys = np.array([f"{f} {t}" for f, t in zip(pairs.f, pairs.type, strict=True)])
    out: dict[str, np.ndarray] = {}
    for k in sorted(set(keys[done].tolist())):
        rows = np.nonzero(done & (keys == k))[0]
        out[k] = rows[np.argsort(pairs.t1[rows], kind="stable")]
    return out


def latency_raw(pairs: Pairs, max_points: int = MAX_POINTS) -> list[dict[str, Any]]:
    """One series per ``f type``: (completion time s, latency ms), downsampled."""
    done = ~np.isnan(pairs.t1)
    out = []
    for name, rows in _groups(pairs, done).items():
        x, y = pairs.t1[rows], (pairs.t1[rows] - pairs.t0[rows]) * 1e3
        keep = downsample(x, y, max_points)
        out.append({"name": name, "n": len(rows), "x": _r(x[keep]), "y": _r(y[keep])})
    return out


def latency_quantiles(pairs: Pairs, end: float, buckets: int = BUCKETS) -> list[dict[str, Any]]:
    """Per f, OK ops only: latency quantiles (ms) in each time bucket; ``None`` in
    a bucket without an op, so a line breaks there instead of bridging a stall."""
    ok = np.array([t == "ok" for t in pairs.type], dtype=bool)
    edges, width = _edges(end, buckets)
    mids = edges[:-1] + width / 2
    out = []
    for f in sorted(set(np.array(pairs.f, dtype=object)[ok].tolist())):
        rows = np.nonzero(ok & (np.array(pairs.f, dtype=object) == f))[0]
        b = np.minimum((pairs.t1[rows] / width).astype(np.int64), buckets - 1)
        lat = (pairs.t1[rows] - pairs.t0[rows]) * 1e3
        order = np.argsort(b, kind="stable")
        b, lat = b[order], lat[order]
        cuts = np.searchsorted(b, np.arange(buckets + 1))
        ys = np.full((len(QUANTILES), buckets), np.nan)
        for i in range(buckets):
            seg = lat[cuts[i] : cuts[i + 1]]
            if len(seg):
                ys[:, i] = np.quantile(seg, QUANTILES)
        for q, y in zip(QUANTILES, ys, strict=True):
            out.append({"name": f"{f} p{q * 100:g}", "x": _r(mids), "y": _r(y)})
    return out


def throughput(pairs: Pairs, end: float, buckets: int = BUCKETS) -> list[dict[str, Any]]:
    """Completions per second in each time bucket, one series per ``f type``."""
    done = ~np.isnan(pairs.t1)
    edges, width = _edges(end, buckets)
    mids = edges[:-1] + width / 2
    out = []
    for name, rows in _groups(pairs, done).items():
        b = np.minimum((pairs.t1[rows] / width).astype(np.int64), buckets - 1)
        counts = np.bincount(b, minlength=buckets)[:buckets] / width
        out.append({"name": name, "x": _r(mids), "y": _r(counts)})
    return out


def stat_series(
    stats: Mapping[str, Any], name: str, scale: float = 1.0, max_points: int = MAX_POINTS
) -> list[dict[str, Any]]:
    """A checker-provided series (``stats[name]``) as plot series, downsampled.

    Accepted shapes: ``[{"time": ns, SERIES: n, ...}]`` rows (one series per
    other field, or per key of a nested map), the same rows under a ``series``
    field, or ``{SERIES: [[t_ns, v], ...]}``. Values are multiplied by ``scale``.
    Anything else yields no series, and the page says the checker gave none.
    """
    raw = stats.get(name)
    if isinstance(raw, Mapping) and isinstance(raw.get("series"), list):
        raw = raw["series"]
    cols: dict[str, tuple[list[float], list[float]]] = {}
    if isinstance(raw, Sequence) and not isinstance(raw, str):
        for row in raw:
            if not isinstance(row, Mapping) or not isinstance(row.get("time"), int | float):
                continue
            t = row["time"] / 1e9
            for k, v in row.items():
                if k == "time":
                    continue
                items = v.items() if isinstance(v, Mapping) else [(k, v)]
                for sk, sv in items:
                    if isinstance(sv, int | float) and not isinstance(sv, bool):
                        xs, ys = cols.setdefault(str(sk), ([], []))
                        xs.append(t)
                        ys.append(float(sv) * scale)
    elif isinstance(raw, Mapping):
        for sk, pts in raw.items():
            if isinstance(pts, Sequence):
                good = [p for p in pts if isinstance(p, Sequence) and len(p) == 2]
                cols[str(sk)] = ([p[0] / 1e9 for p in good], [float(p[1]) * scale for p in good])
    out = []
    for sk, (xs, ys) in sorted(cols.items()):
        x, y = np.array(xs, dtype=np.float64), np.array(ys, dtype=np.float64)
        order = np.argsort(x, kind="stable")
        x, y = x[order], y[order]
        keep = downsample(x, y, max_points)
        out.append({"name": sk, "x": _r(x[keep]), "y": _r(y[keep])})
    return out


def highest(series: list[dict[str, Any]], limit: int = MAX_SERIES) -> list[dict[str, Any]]:
    """The ``limit`` series whose peak is highest, in their order: a run over
    thousands of keys gives a plot a reader can tell apart, and a bounded page."""
    if len(series) <= limit:
        return series

    def peak(s: dict[str, Any]) -> float:
        return max((v for v in s["y"] if v is not None), default=float("-inf"))

    top = {id(s) for s in sorted(series, key=peak, reverse=True)[:limit]}
    return [s for s in series if id(s) in top]


def _edges(end: float, buckets: int) -> tuple[np.ndarray, float]:
    width = max(end, 1e-9) / buckets
    return np.arange(buckets + 1) * width, width


def _r(a: np.ndarray) -> list[float | None]:
    """Rounded to 4 significant-ish decimals: halves the JSON without visible change.
    NaN becomes ``None`` (JSON null: a gap in the plot)."""
    return [None if v != v else v for v in np.round(a.astype(np.float64), 4).tolist()]
