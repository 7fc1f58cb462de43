"""Naming the values a skip jumped over, so an explanation can show them."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.spark.frames import Frames

SHOWN = 8


def with_skipped(fr: Frames, cases: DataFrame, id_cols: list[str], lo: str, hi: str) -> DataFrame:
    """Adds ``skipped`` (the first few values at dense indices strictly between
    ``lo`` and ``hi`` of ``key``) and ``skipped_count``."""
    span = cases.select(
        *id_cols,
        "key",
        F.explode(F.sequence(F.col(lo) + 1, F.least(F.col(hi) - 1, F.col(lo) + SHOWN))).alias(
            "idx"
        ),
    )
    named = (
        span.join(fr.by_index, ["key", "idx"])
        .groupBy(*id_cols)
        .agg(F.sort_array(F.collect_list(F.struct("idx", "value"))).alias("s"))
        .select(*id_cols, F.col("s.value").alias("skipped"))
    )
    return cases.join(named, id_cols, "left").withColumn("skipped_count", F.col(hi) - F.col(lo) - 1)
