"""The flat list of case finders, and collecting their cases in one pass."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from checkers.queue import (
    aborted_reads,
    internal_order,
    lost_writes,
    poll_order,
    unseen,
    version_order,
)
from checkers.spark.frames import Frames
from checkers.workloads.finders import FINDERS as WORKLOAD_FINDERS

Finder = Callable[[Frames], DataFrame]

FINDERS: dict[str, Finder] = {
    "inconsistent-offsets": version_order.inconsistent_offsets,
    "duplicate": version_order.duplicate,
    "lost-write": lost_writes.lost_write,
    "unseen": unseen.unseen,
    "G1a": aborted_reads.g1a,
    "precommitted-read": aborted_reads.precommitted_read,
    "int-poll-skip": internal_order.int_poll_skip,
    "int-nonmonotonic-poll": internal_order.int_nonmonotonic_poll,
    "poll-skip": poll_order.poll_skip,
    "nonmonotonic-poll": poll_order.nonmonotonic_poll,
    "nonmonotonic-send": poll_order.nonmonotonic_send,
    "int-send-skip": internal_order.int_send_skip,
    "int-nonmonotonic-send": internal_order.int_nonmonotonic_send,
    **WORKLOAD_FINDERS,
}


def _tagged(kind: str, cases: DataFrame) -> DataFrame:
    """Cases in one shape: kind, an order for capping, per-instance allowance, JSON."""
    allowed = F.col("allowed") if "allowed" in cases.columns else F.lit(False)
    for c in ("op", "reader", "writer", "max_read"):
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


def find_cases(
    fr: Frames, cap: int
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, dict[str, int]]]:
    """Runs every finder in one Spark job (their findings unioned, capped per
    kind and collected once: each separate action would pay Spark's fixed
    cost per job and re-plan the shared frames); returns up to ``cap``
    instances per kind (instances not covered by an allowance first) and exact
    counts ``{kind: {"total", "allowed"}}``."""
    tagged = [_tagged(kind, finder(fr)) for kind, finder in FINDERS.items()]
    per_kind = Window.partitionBy("kind")
    rows = (
        reduce(DataFrame.unionByName, tagged)
        .select(
            "*",
            F.count("*").over(per_kind).alias("total"),
            F.sum(F.col("allowed").cast("int")).over(per_kind).alias("n_allowed"),
            F.row_number().over(per_kind.orderBy("allowed", "order", "case")).alias("n"),
        )
        .where(F.col("n") <= cap)
        .collect()
    )
    cases: dict[str, list[dict[str, Any]]] = {}
    counts: dict[str, dict[str, int]] = {}
    for r in sorted(rows, key=lambda r: (r["kind"], r["n"])):
        kind = r["kind"]
        counts[kind] = {"total": int(r["total"]), "allowed": int(r["n_allowed"])}
        case = json.loads(r["case"])
        cases.setdefault(kind, []).append({**case, **({"allowed": True} if r["allowed"] else {})})
    return cases, counts
