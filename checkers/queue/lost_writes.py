"""Lost writes: committed messages that later readers passed over."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.spark.frames import Frames, op_ref


def lost_write(fr: Frames) -> DataFrame:
    """A committed message at dense index i was never read by an OK op, although
    some OK poll read a value at index ≥ i.

    Per key, ``bound`` is the highest first index of any OK-read value; every
    value whose last index is at or below it must have been read. Only values
    whose writer must have committed count, and an info writer counts as
    committed once any of its sends was read: so a transaction that is only
    partly visible (torn) shows up here too.
    """
    ok_first = fr.ok_read_values.join(fr.value_index, ["key", "value"])
    bound = ok_first.groupBy("key").agg(F.max("first").alias("bound"))
    max_read = (
        fr.reads.where(F.col("type") == "ok")
        .join(ok_first.join(bound, "key").where(F.col("first") == F.col("bound")), ["key", "value"])
        .groupBy("key")
        .agg(F.min(F.struct(op_ref().alias("op"), "offset", "value")).alias("m"))
        .select("key", F.col("m.op").alias("max_read"), F.col("m.offset").alias("max_offset"))
    )
    candidates = (
        fr.value_index.join(F.broadcast(bound), "key")
        .where(F.col("last") <= F.col("bound"))
        .join(fr.ok_read_values, ["key", "value"], "left_anti")
    )
    return (
        candidates.join(fr.writers.where(F.col("committed")), ["key", "value"])
        .join(max_read, "key", "left")
        .select(
            "key",
            "value",
            F.col("first").alias("index"),
            F.col("offsets")[0].alias("offset"),
            F.col("bound").alias("max_read_index"),
            "writer",
            "max_read",
            "max_offset",
        )
    )
