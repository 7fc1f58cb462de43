"""Offset resets a consumer logged (``offset_resets``: ``[{key, from, to}]``).

librdkafka moves a position back by itself when a fetch is out of range
(``auto.offset.reset``); jepka's client logs each such move on the op that
polled past it. A poll that goes back where its consumer logged a reset is
reported, but allowed: the client did not read out of order, it was moved.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.spark.frames import Frames
from checkers.workloads.extras import with_field

RESETS = "array<struct<key:bigint,from:bigint,to:bigint>>"


def offset_resets(fr: Frames) -> DataFrame:
    """(index, key, reset) per op and key with a logged reset; ``reset`` holds
    the first one's ``from`` and ``to``."""
    return fr.shared(
        "offset-resets",
        lambda fr: (
            with_field(fr, "offset_resets", lambda c: F.from_json(c, RESETS))
            .select("index", F.posexplode("offset_resets").alias("pos", "r"))
            .groupBy("index", F.col("r.key").alias("key"))
            .agg(F.min(F.struct("pos", "r.from", "r.to")).alias("first"))
            .select("index", "key", F.struct("first.from", "first.to").alias("reset"))
        ),
    )


def with_resets(cases: DataFrame, fr: Frames) -> DataFrame:
    """``cases`` (with ``index`` and ``key``) plus ``reset``: the reset the
    op's consumer logged on that key, or null."""
    return cases.join(offset_resets(fr), ["index", "key"], "left")
