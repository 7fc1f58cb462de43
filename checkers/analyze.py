"""``check``: one history in, the result object out.

The flat list of what a check does: load the history into Spark, find every
case-level anomaly, build the dependency graph and search it for cycles, add
the figures reports plot (unseen over time, realtime lag), and decide.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from checkers.cycles import edges
from checkers.cycles.graph import build_graph
from checkers.cycles.search import find_cycles
from checkers.load import Loaded, Source, as_dataframe, read_source
from checkers.queue.check import find_cases
from checkers.queue.lag import realtime_lag
from checkers.queue.unseen import unseen_series
from checkers.result import UNKNOWN, build_result
from checkers.spark.frames import Frames
from checkers.spark.session import (
    is_alive,
    release_jvm_objects,
    start_in_background,
    tune_for_size,
)
from checkers.spark.timeline import Timeline

log = logging.getLogger(__name__)

CAP = 64  # instances kept per kind; exact counts stay in stats
CYCLE_TIMEOUT_S = 60.0


class _Timer:
    """Wall time per phase, and how many Spark jobs each phase ran (every job
    pays a fixed cost in scheduling and planning, so the count is worth
    watching)."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self.jobs: dict[str, int] = {}
        self.spark: SparkSession | None = None

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        sc = self.spark.sparkContext if self.spark is not None else None
        if sc is not None:
            sc.setJobGroup(name, name)
        try:
            yield
        finally:
            self.timings[name] = round(time.perf_counter() - t0, 3)
            if sc is not None:
                self.jobs[name] = len(sc.statusTracker().getJobIdsForGroup(name))
                sc.setJobGroup("", "")


def _op_stats(fr: Frames) -> tuple[dict[str, Any], Timeline | None]:
    """Op counts by function and type, distinct keys, and the history's time
    axis for the figures."""
    rows = (
        fr.ops.groupBy("f", "type")
        .agg(F.count("*").alias("n"), F.min("time").alias("lo"), F.max("time").alias("hi"))
        .collect()
    )
    by_f: dict[str, dict[str, int]] = {}
    for r in rows:
        by_f.setdefault(r["f"], {})[r["type"]] = int(r["n"])
    keys = fr.mops.agg(F.countDistinct("key")).first()
    timeline = (
        Timeline.over(min(int(r["lo"]) for r in rows), max(int(r["hi"]) for r in rows))
        if rows
        else None
    )
    stats = {
        "ops": sum(sum(v.values()) for v in by_f.values()),
        "ops_by_f": by_f,
        "keys": int(keys[0]) if keys else 0,
    }
    return stats, timeline


def check(
    source: Source,
    *,
    ww_deps: bool = True,
    spark: SparkSession | None = None,
    spark_master: str | None = None,
    fmt: str = "auto",
    cap: int = CAP,
    cycle_timeout_s: float = CYCLE_TIMEOUT_S,
) -> dict[str, Any]:
    """Checks a history (file, stored run directory, flat Arrow table or Spark
    DataFrame) and returns the result object of ARCHITECTURE.md.

    Without ``spark``, uses the shared session for ``spark_master`` (default
    ``local[*]``), reading the history while it starts.
    """
    timer = _Timer()
    t0 = time.perf_counter()
    starting = start_in_background(spark_master) if spark is None else None
    with timer("read"):
        loaded = read_source(source, fmt)
    if starting is not None:
        with timer("spark_start"):
            spark = starting.result()
    assert spark is not None
    judge = partial(_judge, loaded, timer, ww_deps=ww_deps, cap=cap, timeout_s=cycle_timeout_s)
    master = spark.sparkContext.master
    try:
        result = judge(spark)
    except Exception as e:
        # Spark stops its context when one of its own threads dies (an out of
        # memory error in the listener bus or the context cleaner of a
        # long-lived session); that says nothing about the history, which a
        # new session checks from the start.
        if is_alive(spark) or loaded.frame is not None:
            raise
        log.warning(
            "the Spark context stopped during the check (%s); checking again",
            str(e).partition("\n")[0],
        )
        timer.spark = None  # its JVM is gone: no jobs to count there
        with timer("spark_start"):
            spark = start_in_background(master).result()
        result = judge(spark)
    finally:
        release_jvm_objects()
    result["timings"]["total"] = round(time.perf_counter() - t0, 3)
    return result


def _judge(
    loaded: Loaded,
    timer: _Timer,
    spark: SparkSession,
    *,
    ww_deps: bool,
    cap: int,
    timeout_s: float,
) -> dict[str, Any]:
    """The analyses of one loaded history on ``spark``, and their verdict."""
    tune_for_size(spark, loaded.rows)
    timer.spark = spark
    with as_dataframe(spark, loaded) as raw:
        fr = Frames(raw)
        try:
            with timer("load"):
                stats, timeline = _op_stats(fr)
            with timer("cases"):
                cases, counts = find_cases(fr, cap)
            with timer("edges"):
                ops = edges.collect(edges.op_intervals(fr))
                ww = edges.collect(edges.ww_edges(fr)) if ww_deps else edges.EMPTY_WW
                wr = edges.collect(edges.wr_edges(fr))
            with timer("cycles"):
                graph = build_graph(ops, ww, wr)
                cycles = find_cycles(graph, ww_deps=ww_deps, timeout_s=timeout_s)
            with timer("figures"):
                stats["unseen_series"] = unseen_series(fr, timeline)
                stats["realtime_lag"] = realtime_lag(fr, timeline)
        finally:
            fr.unpersist()
    stats["graph"] = {
        "nodes": graph.n,
        "edges": len(graph.src),
        "components": dict(cycles.counts),
    }
    result = build_result(
        cases,
        counts,
        cycles,
        ww_deps=ww_deps,
        cap=cap,
        stats=stats,
        timings={**timer.timings, "spark_jobs": timer.jobs},
    )
    if stats["ops"] == 0 and result["valid"] is True:
        result["valid"] = UNKNOWN
        result["stats"]["note"] = "no client operations completed: nothing to judge"
    return result
