"""Unseen messages: acknowledged sends no OK poll ever returned."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.spark.frames import Frames, op_ref
from checkers.spark.timeline import Timeline

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


def unseen_series(fr: Frames, timeline: Timeline | None) -> list[dict[str, Any]]:
    """How many acknowledged messages per key were not yet polled, over time:
    ``[{"time": ns, "unseen": {key: count}}, ...]`` one point per bucket of
    ``timeline`` (``None``: an empty history).

    A message counts from its send's completion until the first OK poll that
    returned it completes (not at all if that poll came first).
    """
    if timeline is None:
        return []
    sends = _ok_sends(fr).select("key", "value", F.col("time").alias("sent"))
    seen = (
        fr.reads.where(F.col("type") == "ok")
        .groupBy("key", "value")
        .agg(F.min("time").alias("seen"))
    )
    life = sends.join(seen, ["key", "value"], "left").where(
        F.col("seen").isNull() | (F.col("seen") > F.col("sent"))
    )
    events = life.select(
        "key", timeline.bucket("sent").alias("b"), F.lit(1).alias("d")
    ).unionByName(
        life.where(F.col("seen").isNotNull()).select(
            "key", timeline.bucket("seen").alias("b"), F.lit(-1).alias("d")
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
                "time": timeline.end(b),
                "unseen": {str(k): c for k, c in sorted(current.items())},
            }
        )
    return series
