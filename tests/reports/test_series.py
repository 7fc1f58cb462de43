from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from history import flatten
from history.op import Op
from reports.pairs import fold
from reports.series import (
    downsample,
    highest,
    latency_quantiles,
    latency_raw,
    stat_series,
    throughput,
)

MS = 1_000_000


@settings(max_examples=80, deadline=None)
@given(arrays(np.float64, st.integers(1, 3000), elements=st.floats(0, 1e6)), st.integers(2, 500))
def test_downsample_is_bounded_and_keeps_extremes(y: np.ndarray, max_points: int) -> None:
    x = np.arange(len(y), dtype=np.float64)
    keep = downsample(x, y, max_points)
    assert len(keep) <= max(max_points, 2) or len(y) <= max_points
    assert np.all(np.diff(keep) > 0)
    assert y[keep].max() == y.max() and y[keep].min() == y.min()
    if len(y) <= max_points:
        assert len(keep) == len(y)


def _history(latencies_ms: list[float]) -> list[Op]:
    ops, t = [], 0
    for i, lat in enumerate(latencies_ms):
        ops.append(Op(2 * i, t, "invoke", 0, "send", [["send", 0, i]]))
        t += int(lat * MS)
        ops.append(Op(2 * i + 1, t, "ok", 0, "send", [["send", 0, [i, i]]]))
    return ops


def test_latency_and_throughput_from_a_known_history() -> None:
    lats = [1.0] * 50 + [100.0] + [1.0] * 49
    pairs, _, end = fold(flatten(_history(lats)))
    raw = latency_raw(pairs)
    assert [s["name"] for s in raw] == ["send ok"]
    assert raw[0]["n"] == 100 and max(raw[0]["y"]) == 100.0
    rate = throughput(pairs, end, buckets=10)
    width = end / 10
    assert round(sum(rate[0]["y"]) * width) == 100
    q = {s["name"]: s for s in latency_quantiles(pairs, end, buckets=4)}
    assert set(q) == {"send p50", "send p95", "send p99", "send p100"}
    p100, p50 = q["send p100"]["y"], q["send p50"]["y"]
    assert max(v for v in p100 if v is not None) == 100.0
    assert max(v for v in p50 if v is not None) == 1.0
    # nothing completes while the 100 ms op runs: that bucket is a gap, not a line
    assert q["send p50"]["x"] == [round(end / 8 * i, 4) for i in (1, 3, 5, 7)]
    assert p50[2] is None and None not in (p50[0], p50[1], p50[3])


def test_stat_series_reads_both_shapes_and_ignores_junk() -> None:
    rows = {
        "unseen": [
            {"time": 0, "unseen": {"0": 1, "1": 2}},
            {"time": 2e9, "unseen": {"0": 0}},
            "junk",
            {"no-time": 1},
        ]
    }
    got = {s["name"]: (s["x"], s["y"]) for s in stat_series(rows, "unseen")}
    assert got == {"0": ([0.0, 2.0], [1.0, 0.0]), "1": ([0.0], [2.0])}
    pts = {"lag": {"p1": [[1e9, 0.5], [3e9, 2.0], "bad"]}}
    assert stat_series(pts, "lag") == [{"name": "p1", "x": [1.0, 3.0], "y": [0.5, 2.0]}]
    assert stat_series({"lag": 3}, "lag") == [] and stat_series({}, "lag") == []


def test_a_plot_keeps_the_series_with_the_highest_peaks() -> None:
    series = [{"name": str(k), "x": [0.0, 1.0], "y": [None, float(k % 7)]} for k in range(30)]
    kept = highest(series, limit=4)
    assert [s["name"] for s in kept] == ["6", "13", "20", "27"]  # the peaks of 6, in order
    assert highest(series[:3], limit=4) == series[:3]
