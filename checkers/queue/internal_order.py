"""Order inside one op: consecutive polls or sends of a key within a single
transaction (or poll/send op) must sit next to each other in the log."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from checkers.queue.resets import with_resets
from checkers.queue.skipped import with_skipped
from checkers.spark.frames import Frames, op_ref


def _deltas(fr: Frames, mop: str) -> DataFrame:
    """Consecutive same-key micro-ops of one op, with Δ = idx(b) - idx(a)."""
    rows = fr.positioned.where(F.col("mop") == mop)
    if mop == "poll":
        # A rebalance during the op invalidates assumptions about its positions.
        rebalanced = fr.ops.select("index", F.explode("rebalance_keys").alias("key")).distinct()
        rows = rows.join(rebalanced, ["index", "key"], "left_anti")
    else:
        rows = rows.where(F.col("type").isin("ok", "info"))
    w = Window.partitionBy("index", "key").orderBy("mop_index", "pos")
    return (
        rows.select(
            "*",
            *[F.lag(c).over(w).alias(f"prev_{c}") for c in ("idx", "value", "offset")],
            F.lag("mop_index").over(w).alias("prev_mop"),
        )
        .where(F.col("prev_idx").isNotNull() & F.col("idx").isNotNull())
        .select(
            "key",
            (F.col("idx") - F.col("prev_idx")).alias("delta"),
            "prev_value",
            "prev_offset",
            "prev_idx",
            "value",
            "offset",
            "idx",
            "prev_mop",
            "mop_index",
            F.coalesce("pos", F.lit(0)).alias("pos"),
            op_ref().alias("op"),
            "index",
        )
    )


def _skips(fr: Frames, mop: str) -> DataFrame:
    cases = fr.shared(f"{mop}-deltas", lambda f: _deltas(f, mop)).where(F.col("delta") > 1)
    return with_skipped(fr, cases, ["index", "key", "mop_index", "pos"], "prev_idx", "idx").drop(
        "index"
    )


def int_poll_skip(fr: Frames) -> DataFrame:
    """Inside one op, two consecutive polled records of a key jump over records
    known to exist between them. Keys the op saw rebalanced are exempt."""
    return _skips(fr, "poll")


def int_nonmonotonic_poll(fr: Frames) -> DataFrame:
    """Inside one op, a key's polled records go backwards or repeat (Δ < 1).
    Allowed where the op's consumer logged an offset reset of the key."""
    cases = fr.shared("poll-deltas", lambda f: _deltas(f, "poll")).where(F.col("delta") < 1)
    return with_resets(cases, fr).withColumn("allowed", F.col("reset").isNotNull()).drop("index")


def int_send_skip(fr: Frames) -> DataFrame:
    """Two consecutive sends to a key in one op are not adjacent in the log:
    another producer's record landed between them. Kafka transactions do not
    isolate writes, so this is reported but allowed."""
    return _skips(fr, "send")


def int_nonmonotonic_send(fr: Frames) -> DataFrame:
    """Two sends to a key in one op landed in the opposite order (Δ < 1)."""
    return (
        fr.shared("send-deltas", lambda f: _deltas(f, "send"))
        .where(F.col("delta") < 1)
        .drop("index")
    )
