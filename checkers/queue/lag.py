"""Realtime lag: how far behind the log's known end a consumer's polls were.

Not an anomaly (a slow consumer is not wrong), but the figure that shows stuck
consumers, so reports plot it.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from checkers.spark.frames import Frames


def _expired(fr: Frames) -> DataFrame:
    """(key, idx) → the earliest time any completed op proved that a record at
    dense index ≥ idx existed (it polled one, or an OK send was acknowledged)."""
    obs = fr.positioned.where(
        F.col("idx").isNotNull() & ((F.col("mop") == "poll") | (F.col("type") == "ok"))
    )
    per = obs.groupBy("key", "idx").agg(F.min("time").alias("t"))
    w = (
        Window.partitionBy("key")
        .orderBy(F.desc("idx"))
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    return per.withColumn("expired", F.min("t").over(w)).drop("t")


def lag_frame(fr: Frames) -> DataFrame:
    """One row per (OK poll, assigned key): the poll's lag on that key in ns.

    The process's known position on a key is the highest record it polled there
    since its last assign/subscribe; lag = the poll's invoke time minus the time
    a later record was first proven to exist, floored at 0.
    """
    polls = (
        fr.ops.where((F.col("type") == "ok") & F.col("f").isin("poll", "txn"))
        .join(fr.segments, "index")
        .where(F.col("assigned").isNotNull())
        .select(
            "index",
            "process",
            "seg",
            "invoke_time",
            "time",
            F.explode("assigned").alias("key"),
            F.lit(1).alias("probe"),
        )
    )
    known = (
        fr.positioned.where((F.col("mop") == "poll") & F.col("idx").isNotNull())
        .groupBy("index", "key", "process")
        .agg(F.max("idx").alias("read_idx"))
        .join(fr.segments.select("index", "seg"), "index")
        .withColumn("probe", F.lit(0))
    )
    rows = polls.unionByName(known, allowMissingColumns=True)
    w = Window.partitionBy("process", "key", "seg").orderBy("index", F.desc("probe"))
    rows = rows.withColumn(
        "known", F.max("read_idx").over(w.rowsBetween(Window.unboundedPreceding, 0))
    )
    probes = rows.where(F.col("probe") == 1).withColumn(
        "idx", F.coalesce(F.col("known"), F.lit(-1)) + 1
    )
    return (
        probes.join(_expired(fr), ["key", "idx"], "left")
        .select(
            "index",
            "process",
            "key",
            "time",
            F.greatest(F.lit(0), F.col("invoke_time") - F.col("expired")).cast("long").alias("lag"),
        )
        .fillna({"lag": 0})
    )


def realtime_lag(fr: Frames, buckets: int = 200) -> dict[str, Any]:
    """Worst lag overall, per key and per process, and the worst per time bucket."""
    lags = lag_frame(fr).cache()
    try:
        worst = lags.orderBy(F.desc("lag"), "index").first()
        if worst is None:
            return {"worst": None, "by_key": {}, "by_process": {}, "series": []}
        by_key = {str(r[0]): int(r[1]) for r in lags.groupBy("key").agg(F.max("lag")).collect()}
        by_proc = {
            str(r[0]): int(r[1]) for r in lags.groupBy("process").agg(F.max("lag")).collect()
        }
        span = lags.agg(F.min("time"), F.max("time")).first()
        lo, hi = int(span[0]), int(span[1])
        width = max(1, (hi - lo) // buckets + 1)
        series = [
            {"time": lo + (int(r[0]) + 1) * width, "lag": int(r[1])}
            for r in lags.groupBy(((F.col("time") - lo) / width).cast("long").alias("b"))
            .agg(F.max("lag"))
            .orderBy("b")
            .collect()
        ]
        return {
            "worst": {
                "lag": int(worst["lag"]),
                "op": {"index": int(worst["index"]), "process": worst["process"]},
                "key": int(worst["key"]),
                "time": int(worst["time"]),
            },
            "by_key": by_key,
            "by_process": by_proc,
            "series": series,
        }
    finally:
        lags.unpersist()
