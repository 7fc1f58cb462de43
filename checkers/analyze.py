"""``check``: one history in, the result object out.

The flat list of what a check does: load the history into Spark, find every
case-level anomaly, build the dependency graph and search it for cycles, add
the figures reports plot (unseen over time, realtime lag), and decide.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from functools import partial
from typing import Any

import numpy as np
from pyspark.sql import DataFrame, SparkSession

from checkers.cycles import edges
from checkers.cycles.graph import build_graph
from checkers.cycles.search import find_cycles
from checkers.load import Loaded, Source, as_dataframe, read_source
from checkers.queue.check import FINDERS
from checkers.queue.lag import realtime_lag
from checkers.queue.run import KeyedResults, OpFacts, analyse_keys, key_rows
from checkers.queue.unseen import unseen_series
from checkers.result import UNKNOWN, build_result
from checkers.spark.frames import micro_ops
from checkers.spark.session import (
    in_background,
    is_alive,
    release_jvm_heap,
    release_jvm_objects,
    release_unused_memory,
    start_in_background,
    tune_for_size,
)
from checkers.workloads.finders import workload_cases

log = logging.getLogger(__name__)

CAP = 64  # instances kept per kind; exact counts stay in stats
BIG_HEAP_ROWS = 1_000_000  # histories whose Spark jobs leave a heap worth giving back
CYCLE_TIMEOUT_S = 60.0
WARM_UP_OPS = 20  # ops of the synthetic history a session is warmed up with


class _Timer:
    """Wall time per phase, and how many Spark jobs each phase ran (every job
    pays a fixed cost in scheduling and planning, so the count is worth
    watching)."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self.jobs: dict[str, int] = {}
        self.spark: SparkSession | None = None
        # a job group of this check's own: a session keeps the jobs of its
        # earlier checks (a run's warm-up, a suite's other runs) by group
        self._check = uuid.uuid4().hex

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        sc = self.spark.sparkContext if self.spark is not None else None
        group = f"{name}-{self._check}"
        if sc is not None:
            sc.setJobGroup(group, name)
        try:
            yield
        finally:
            self.timings[name] = round(time.perf_counter() - t0, 3)
            if sc is not None:
                self.jobs[name] = len(sc.statusTracker().getJobIdsForGroup(group))
                sc.setJobGroup("", "")


def merge_cases(
    rows: list[tuple[str, bool, int, str]], cap: int
) -> dict[str, list[dict[str, Any]]]:
    """Up to ``cap`` instances per kind (not allowed first, then by op) from
    case rows (kind, allowed, order, JSON)."""
    by_kind: dict[str, list[tuple[bool, int, str]]] = {}
    for kind, allowed, order, case in rows:
        by_kind.setdefault(kind, []).append((allowed, order, case))
    return {
        kind: [
            {**json.loads(case), **({"allowed": True} if allowed else {})}
            for allowed, _, case in sorted(found)[:cap]
        ]
        for kind, found in sorted(by_kind.items())
    }


def find_cases(
    keyed: KeyedResults, raw: DataFrame, fields: frozenset[str], seen: np.ndarray, cap: int
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, dict[str, int]]]:
    """Every case-level anomaly: the per-key analyses' and, where the history
    carries their fields, the workload checks'; capped per kind, with exact
    counts ``{kind: {"total", "allowed"}}``."""
    rows, counts = keyed.cases(list(FINDERS))
    for kind, allowed, order, case in workload_cases(raw, seen, fields):
        c = counts.setdefault(kind, {"total": 0, "allowed": 0})
        c["total"] += 1
        c["allowed"] += int(allowed)
        rows.append((kind, allowed, order, case))
    return merge_cases(rows, cap), counts


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
    DataFrame) and returns the result object of docs/architecture.md.

    Without ``spark``, uses the shared session for ``spark_master`` (default
    ``local[*]``), reading the history while it starts.
    """
    timer = _Timer()
    t0 = time.perf_counter()
    starting = start_in_background(spark_master) if spark is None else None
    with timer("read"):
        loaded = read_source(source, fmt)
    # Known without Spark: worked out while Spark starts and shuffles.
    facts = (
        in_background(OpFacts.of, loaded.take_heads, name="op-facts")
        if loaded.frame is None
        else None
    )
    if starting is not None:
        with timer("spark_start"):
            spark = starting.result()
    assert spark is not None
    judge = partial(
        _judge, loaded, facts, timer, ww_deps=ww_deps, cap=cap, timeout_s=cycle_timeout_s
    )
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


def warm_up(spark: SparkSession) -> dict[str, Any]:
    """Checks a small synthetic (valid) history on ``spark``; returns the
    result. A session's first check compiles the query code of Spark's jobs
    and starts its Python workers, seconds that a run spends while its
    workload runs instead of before its verdict."""
    from checkers.synth import write_history

    with tempfile.TemporaryDirectory(prefix="jepka-warm-up-") as folder:
        path = os.path.join(folder, "history.jsonl")
        write_history(path, seed=1, n_ops=WARM_UP_OPS, processes=3, keys=4)
        return check(path, spark=spark)


def _judge(
    loaded: Loaded,
    facts: Future[OpFacts] | None,
    timer: _Timer,
    spark: SparkSession,
    *,
    ww_deps: bool,
    cap: int,
    timeout_s: float,
) -> dict[str, Any]:
    """The analyses of one loaded history on ``spark``, and their verdict."""
    tune_for_size(spark, loaded.rows)
    big = loaded.rows is None or loaded.rows >= BIG_HEAP_ROWS
    timer.spark = spark
    with as_dataframe(spark, loaded) as raw:
        with timer("shuffle"):
            rows = key_rows(micro_ops(raw))
        try:
            with timer("load"):
                known = (
                    facts.result() if facts is not None else OpFacts.of(partial(loaded.heads, raw))
                )
            stats, timeline, ctx = dict(known.stats), known.timeline, known.ctx
            with timer("cases"):
                keyed, seen = analyse_keys(spark, rows, ctx, cap, big=big)
                cases, counts = find_cases(keyed, raw, known.fields, seen, cap)
        finally:
            rows.unpersist(blocking=big)  # a big heap is given back next
    if big:
        release_jvm_heap(spark)
    with timer("figures"):
        stats["keys"] = keyed.keys
        stats["unseen_series"] = unseen_series(keyed.unseen_deltas(), timeline)
        stats["realtime_lag"] = realtime_lag(keyed.lags(), ctx.processes, timeline)
    ww = keyed.ww if ww_deps else edges.EMPTY_WW
    wr = keyed.wr
    graph_ops = known.graph_ops
    del keyed, ctx, known  # the graph of a 10M-op history needs their gigabyte
    release_unused_memory()
    with timer("cycles"):
        graph = build_graph(graph_ops, ww, wr)
        cycles = find_cycles(graph, ww_deps=ww_deps, timeout_s=timeout_s)
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
