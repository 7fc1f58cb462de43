"""The workload checks' case finders, by kind, and the extra field a history
must carry for each to apply (other histories skip them)."""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.queue.check import REF_FIELDS
from checkers.spark.frames import Frames
from checkers.workloads import eos, group

FINDERS: dict[str, tuple[str, Callable[[Frames], DataFrame]]] = {
    "eos-lost": ("output_shift", eos.eos_lost),
    "eos-duplicate": ("output_shift", eos.eos_duplicate),
    "committed-offset-regression": ("commit", group.committed_offset_regression),
    "split-ownership": ("commit", group.split_ownership),
    "resume-skip": ("commit", group.resume_skip),
}
FIELDS = tuple(sorted({field for field, _ in FINDERS.values()}))


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
    kinds = [kind for kind, (field, _) in FINDERS.items() if field in fields]
    if not kinds:
        return []
    fr = Frames(raw, seen_info)
    try:
        tagged = [_tagged(kind, FINDERS[kind][1](fr)) for kind in kinds]
        rows = reduce(DataFrame.unionByName, tagged).collect()
    finally:
        fr.unpersist()
    return [(r["kind"], bool(r["allowed"]), int(r["order"]), r["case"]) for r in rows]
