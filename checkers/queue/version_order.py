"""Anomalies of the version order itself: one offset, two values; one value,
two offsets."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.spark.frames import Frames

SHOWN_OPS = 8


def _observers(fr: Frames, on: list[str]) -> DataFrame:
    """Who observed each (key, offset, value): a few ops per group, for explanations."""
    return fr.mops.where(F.col("offset").isNotNull()).select(
        *on,
        F.struct(
            "offset",
            "value",
            "mop",
            F.col("index").alias("index"),
            "process",
            "time",
            "type",
            "f",
        ).alias("obs"),
    )


def inconsistent_offsets(fr: Frames) -> DataFrame:
    """Two different values observed at the same offset of a key.

    Observed means polled by any op (polls must always return committed data) or
    sent by an op that must have committed. Kafka assigns each offset once, so
    this means replicas diverged or a write was acknowledged at a wrong offset.
    """
    cases = (
        fr.versions.groupBy("key", "offset", "idx")
        .agg(F.sort_array(F.collect_set("value")).alias("values"))
        .where(F.size("values") > 1)
    )
    obs = (
        _observers(fr, ["key", "offset"])
        .join(cases.select("key", "offset"), ["key", "offset"], "left_semi")
        .groupBy("key", "offset")
        .agg(F.slice(F.sort_array(F.collect_list("obs")), 1, SHOWN_OPS).alias("ops"))
    )
    return cases.join(obs, ["key", "offset"], "left")


def duplicate(fr: Frames) -> DataFrame:
    """One value appears at more than one offset of a key: the message was
    written twice (e.g. a producer retry that idempotence should have removed)."""
    cases = fr.value_index.where(F.size("offsets") > 1).select(
        "key", "value", "offsets", F.size("offsets").alias("count")
    )
    obs = (
        _observers(fr, ["key", "value"])
        .join(cases.select("key", "value"), ["key", "value"], "left_semi")
        .groupBy("key", "value")
        .agg(F.slice(F.sort_array(F.collect_list("obs")), 1, SHOWN_OPS).alias("ops"))
    )
    return cases.join(obs, ["key", "value"], "left")
