"""Realtime lag: how far behind the log's known end a consumer's polls were.

Not an anomaly (a slow consumer is not wrong), but the figure that shows stuck
consumers, so reports plot it.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from checkers.spark.frames import Frames
from checkers.spark.timeline import Timeline


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


# grouping_id() of each grouping set over (key, process, b): 1 bits are the
# columns a set leaves out.
BY_KEY, BY_PROCESS, BY_BUCKET, OVERALL = 0b011, 0b101, 0b110, 0b111


def realtime_lag(fr: Frames, timeline: Timeline | None) -> dict[str, Any]:
    """Worst lag overall, per key, per process and per bucket of ``timeline``,
    all from one aggregation (one Spark job)."""
    empty: dict[str, Any] = {"worst": None, "by_key": {}, "by_process": {}, "series": []}
    if timeline is None:
        return empty
    lags = lag_frame(fr).withColumn("b", timeline.bucket("time"))
    # Highest lag first, then the earliest op.
    worst = F.max(F.struct("lag", (-F.col("index")).alias("neg_index"), "process", "key", "time"))
    rows = (
        lags.groupingSets([["key"], ["process"], ["b"], []], "key", "process", "b")
        .agg(F.max("lag").alias("lag"), worst.alias("worst"), F.grouping_id().alias("g"))
        .collect()
    )
    by_set: dict[int, list[Any]] = {}
    for r in rows:
        by_set.setdefault(int(r["g"]), []).append(r)
    overall = [r for r in by_set.get(OVERALL, []) if r["worst"] is not None]
    if not overall:
        return empty
    w = overall[0]["worst"]
    return {
        "worst": {
            "lag": int(w["lag"]),
            "op": {"index": -int(w["neg_index"]), "process": w["process"]},
            "key": int(w["key"]),
            "time": int(w["time"]),
        },
        "by_key": {str(r["key"]): int(r["lag"]) for r in by_set.get(BY_KEY, [])},
        "by_process": {str(r["process"]): int(r["lag"]) for r in by_set.get(BY_PROCESS, [])},
        "series": [
            {"time": timeline.end(int(r["b"])), "lag": int(r["lag"])}
            for r in sorted(by_set.get(BY_BUCKET, []), key=lambda r: r["b"])
        ],
    }
