"""Running the workload kinds' finders (:class:`checkers.kind.PerWorkload`
kinds of the registry) on a history that carries their field; other
histories skip them."""

from __future__ import annotations

from functools import reduce

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.kind import PerWorkload
from checkers.kinds import KINDS
from checkers.queue.check import REF_FIELDS
from checkers.spark.frames import Frames

FINDERS: dict[str, PerWorkload] = {
    name: kind.finder for name, kind in KINDS.items() if isinstance(kind.finder, PerWorkload)
}
FIELDS = tuple(sorted({finder.field for finder in FINDERS.values()}))


def _tagged(kind: str, cases: DataFrame) -> DataFrame:
    """Cases in one shape: kind, an order for capping, per-instance allowance, JSON."""
    allowed = F.col("allowed") if "allowed" in cases.columns else F.lit(False)
    for c in REF_FIELDS:
        if c in cases.columns:
            order = F.col(f"{c}.index")
            break
    else:
        order = F.col("key")
    detail = [c for c in cases.columns if c != "allowed"]
    return cases.select(
        F.lit(kind).alias("kind"),
        order.cast("long").alias("order"),
        allowed.alias("allowed"),
        # nulls kept: a case names every field of its kind, known or not
        F.to_json(F.struct(*detail), {"ignoreNullFields": "false"}).alias("case"),
    )


def workload_cases(
    raw: DataFrame, seen_info: np.ndarray, fields: set[str]
) -> list[tuple[str, bool, int, str]]:
    """Every case of the workload checks whose field the history carries, as
    (kind, allowed, order, JSON), from one Spark job."""
    kinds = [kind for kind, finder in FINDERS.items() if finder.field in fields]
    if not kinds:
        return []
    fr = Frames(raw, seen_info)
    try:
        tagged = [_tagged(kind, FINDERS[kind].find(fr)) for kind in kinds]
        rows = reduce(DataFrame.unionByName, tagged).collect()
    finally:
        fr.unpersist()
    return [(r["kind"], bool(r["allowed"]), int(r["order"]), r["case"]) for r in rows]
