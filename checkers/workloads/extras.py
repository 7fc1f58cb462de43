"""Completed client ops with their workload-specific fields, parsed once.

Those fields sit in the flattened table's ``extra`` column (JSON of every
field beyond the core six) on each op's first row; the queue frames drop it.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from checkers.spark.frames import NEMESIS, Frames


def extras(fr: Frames) -> DataFrame:
    """(index, extra) of every client completion that carries extra fields."""
    return fr.shared(
        "workload-extras",
        lambda fr: fr.raw.where(
            (F.col("row") == 0)
            & (F.col("process") != NEMESIS)
            & (F.col("type") != "invoke")
            & F.col("extra").isNotNull()
        ).select(F.col("index").cast("bigint").alias("index"), "extra"),
    )


def with_field(fr: Frames, field: str, parse: Callable[[Column], Column]) -> DataFrame:
    """Completed ops (``fr.ops`` columns) that have the top-level extra
    ``field``, its JSON text parsed by ``parse`` into a column of that name."""
    parsed = extras(fr).select(
        "index", parse(F.get_json_object("extra", f"$.{field}")).alias(field)
    )
    return fr.ops.join(parsed.where(F.col(field).isNotNull()), "index")
