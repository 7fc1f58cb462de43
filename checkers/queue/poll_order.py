"""Order across one process's ops: where each poll starts relative to where the
process's previous poll of that key stopped, and where its sends land.

A process consumes each key from a position that only an assign/subscribe, a
rebalance of that key, or a rollback may move. Per process and key, the scan
resets at each of those; a failed (or crashed) transaction's polls must be
rewound by the next op, which must start at or before the first record the
failed op polled. A poll that goes back after its consumer logged an offset
reset of the key (``checkers.queue.resets``) is reported but allowed.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from checkers.queue.resets import with_resets
from checkers.queue.skipped import with_skipped
from checkers.spark.frames import Frames, op_ref

_END = ("idx", "value", "offset")


def _op_key_span(fr: Frames, mop: str) -> DataFrame:
    """Per (op, key): the first and last record of that key the op touched."""
    rows = fr.positioned.where(F.col("mop") == mop)
    order = ["mop_index", F.coalesce("pos", F.lit(0)).alias("p")]
    return rows.groupBy("index", "key", "type", "process", "time", "f").agg(
        F.min(F.struct(*order, *_END)).alias("first"),
        F.max(F.struct(*order, *_END)).alias("last"),
    )


def _poll_deltas(fr: Frames) -> DataFrame:
    """Per OK poll of a key: Δ from the process's reference position, with
    ``mode`` "read" (after an OK poll: both directions checked) or "rewind"
    (after only failed polls: the op must not start past the failed op's first
    record)."""
    spans = _op_key_span(fr, "poll").where(F.col("first.idx").isNotNull())
    rebalances = fr.ops.select(
        "index", "process", F.explode("rebalance_keys").alias("key")
    ).withColumn("rb", F.lit(1))
    rows = spans.withColumn("rb", F.lit(0)).unionByName(rebalances, allowMissingColumns=True)
    by_key = Window.partitionBy("process", "key").orderBy("index", F.desc("rb"))
    rows = rows.withColumn(
        "kseg", F.sum("rb").over(by_key.rowsBetween(Window.unboundedPreceding, 0))
    ).where(F.col("rb") == 0)
    rows = rows.join(fr.segments, "index")
    w = Window.partitionBy("process", "key", "seg", "kseg").orderBy("index")
    me = F.struct(op_ref().alias("op"), "first", "last")
    rows = rows.select(
        "*",
        F.lag(me).over(w).alias("prev"),
        F.last(F.when(F.col("type") == "ok", me), ignorenulls=True)
        .over(w.rowsBetween(Window.unboundedPreceding, -1))
        .alias("last_ok"),
    )
    read = F.col("last_ok").isNotNull()
    ref = F.when(read, F.col("last_ok")).otherwise(F.col("prev"))
    ref_idx = F.when(read, F.col("last_ok.last.idx")).otherwise(F.col("prev.first.idx") - 1)
    rows = rows.where((F.col("type") == "ok") & (read | F.col("prev").isNotNull()))
    return (
        with_resets(rows, fr)
        .select("*", ref.alias("ref"), ref_idx.alias("ref_idx"))
        .select(
            "key",
            (F.col("first.idx") - F.col("ref_idx")).alias("delta"),
            F.when(read, "read").otherwise("rewind").alias("mode"),
            "via",
            "index",
            F.col("ref.op").alias("prev_op"),
            F.col("ref.last.value").alias("prev_value"),
            F.col("ref.last.offset").alias("prev_offset"),
            F.col("ref.first.offset").alias("prev_first_offset"),
            op_ref().alias("op"),
            F.col("first.value").alias("value"),
            F.col("first.offset").alias("offset"),
            F.col("first.idx").alias("idx"),
            "ref_idx",
            "reset",
            ((F.col("via") == "subscribe") | F.col("reset").isNotNull()).alias("allowed"),
        )
    )


def poll_skip(fr: Frames) -> DataFrame:
    """A process's poll of a key starts more than one record past where its
    previous OK poll of that key stopped, with no assign, subscribe or rebalance
    of the key in between; or it starts past the first record of a failed
    transaction's poll that it should have rewound to. Records in between were
    skipped. Allowed for keys the process consumes via subscribe, and after
    a logged offset reset."""
    cases = fr.shared("poll-order", _poll_deltas).where(F.col("delta") > 1)
    return with_skipped(fr, cases, ["index", "key"], "ref_idx", "idx").drop("index")


def nonmonotonic_poll(fr: Frames) -> DataFrame:
    """A process's poll of a key starts at or before a record its previous OK
    poll already returned, with nothing in between that could move it back.
    Allowed for keys the process consumes via subscribe, and where the op's
    consumer logged an offset reset of the key."""
    return (
        fr.shared("poll-order", _poll_deltas)
        .where((F.col("delta") < 1) & (F.col("mode") == "read"))
        .drop("index", "ref_idx")
    )


def nonmonotonic_send(fr: Frames) -> DataFrame:
    """One producer's later op sent to a key and the record landed at or before
    the record its previous sending op wrote to that key (Δ < 1). Only OK and
    info ops count; a send whose position is unknown is not judged."""
    spans = _op_key_span(fr, "send").where(F.col("type").isin("ok", "info"))
    w = Window.partitionBy("process", "key").orderBy("index")
    me = F.struct(op_ref().alias("op"), "last")
    return (
        spans.withColumn("prev", F.lag(me).over(w))
        .withColumn("delta", F.col("first.idx") - F.col("prev.last.idx"))
        .where(F.col("delta") < 1)
        .select(
            "key",
            "delta",
            F.col("prev.op").alias("prev_op"),
            F.col("prev.last.value").alias("prev_value"),
            F.col("prev.last.offset").alias("prev_offset"),
            op_ref().alias("op"),
            F.col("first.value").alias("value"),
            F.col("first.offset").alias("offset"),
        )
    )
