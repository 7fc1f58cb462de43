"""Unseen messages: acknowledged sends no OK poll ever returned."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.spark.frames import Frames, op_ref

SHOWN = 8


def _ok_sends(fr: Frames) -> DataFrame:
    return fr.sends.where(F.col("type") == "ok")


def unseen(fr: Frames) -> DataFrame:
    """Messages acknowledged to a producer (OK sends) that no OK poll returned by
    the end of the history, one instance per key.

    Unlike a lost write, nothing proves these were skipped: they may only be
    very late. The final polls exist to drain them, so by the end any left are
    an error.
    """
    missing = _ok_sends(fr).join(fr.ok_read_values, ["key", "value"], "left_anti")
    return missing.groupBy("key").agg(
        F.count("*").alias("count"),
        F.slice(
            F.sort_array(F.collect_list(F.struct("offset", "value", op_ref().alias("writer")))),
            1,
            SHOWN,
        ).alias("messages"),
    )


def unseen_series(fr: Frames, buckets: int = 200) -> list[dict[str, Any]]:
    """How many acknowledged messages per key were not yet polled, over time:
    ``[{"time": ns, "unseen": {key: count}}, ...]`` at most ``buckets`` points.

    A message counts from its send's completion until the first OK poll that
    returned it completes (not at all if that poll came first).
    """
    sends = _ok_sends(fr).select("key", "value", F.col("time").alias("sent"))
    seen = (
        fr.reads.where(F.col("type") == "ok")
        .groupBy("key", "value")
        .agg(F.min("time").alias("seen"))
    )
    life = sends.join(seen, ["key", "value"], "left").where(
        F.col("seen").isNull() | (F.col("seen") > F.col("sent"))
    )
    span = fr.ops.agg(F.min("time").alias("lo"), F.max("time").alias("hi")).first()
    if span is None or span["lo"] is None:
        return []
    lo, hi = int(span["lo"]), int(span["hi"])
    width = max(1, (hi - lo) // buckets + 1)

    def bucket(c: str) -> F.Column:
        return ((F.col(c) - lo) / width).cast("long")

    events = life.select("key", bucket("sent").alias("b"), F.lit(1).alias("d")).unionByName(
        life.where(F.col("seen").isNotNull()).select(
            "key", bucket("seen").alias("b"), F.lit(-1).alias("d")
        )
    )
    rows = events.groupBy("b", "key").agg(F.sum("d").alias("d")).collect()
    deltas: dict[int, dict[int, int]] = {}
    for r in rows:
        deltas.setdefault(int(r["b"]), {})[int(r["key"])] = int(r["d"])
    current: dict[int, int] = {}
    series = []
    for b in range(min(deltas, default=0), max(deltas, default=-1) + 1):
        for k, d in deltas.get(b, {}).items():
            current[k] = current.get(k, 0) + d
        series.append(
            {
                "time": lo + (b + 1) * width,
                "unseen": {str(k): c for k, c in sorted(current.items())},
            }
        )
    return series
