"""Reads of data that should not have been visible: aborted or uncommitted."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.spark.frames import Frames, op_ref, prefixed


def g1a(fr: Frames) -> DataFrame:
    """G1a, aborted read: an OK poll returned a value whose sending op definitely
    failed. A read_committed consumer must never see an aborted transaction's
    records."""
    failed = prefixed(
        fr.sends.where(F.col("type") == "fail").select(
            "key", "value", op_ref().alias("writer"), "offset"
        ),
        "w_",
        ["key", "value", "writer", "offset"],
    )
    readers = fr.reads.where(F.col("type") == "ok").select(
        "key", "value", "offset", op_ref().alias("reader")
    )
    joined = readers.join(
        failed,
        (F.col("key") == F.col("w_key")) & (F.col("value") == F.col("w_value")),
    )
    return joined.select("key", "value", "offset", F.col("w_writer").alias("writer"), "reader")


def precommitted_read(fr: Frames) -> DataFrame:
    """A transaction polled a value it sent itself. Most databases allow reading
    your own writes, but under Kafka's read_committed a record is invisible to
    every consumer, its producer's included, until its transaction commits."""
    sends = fr.sends.select("index", "key", "value", F.col("mop_index").alias("send_mop"))
    reads = fr.reads.select(
        "index",
        "key",
        "value",
        "offset",
        F.col("mop_index").alias("poll_mop"),
        op_ref().alias("op"),
    )
    return reads.join(sends, ["index", "key", "value"]).select(
        "key", "value", "offset", "op", "send_mop", "poll_mop"
    )
