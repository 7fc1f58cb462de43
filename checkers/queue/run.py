"""The queue analyses on Spark: the op-level facts from each op's first row
(on the driver), then one grouped map that hands each key's rows to
:func:`checkers.queue.check.analyse_key`.

One shuffle by key and numpy per key replace a plan of dozens of joins and
windows: every analysis but one looks at a single key, and the one that
does not (an info transaction counts as committed once any of its sends was
read, on any key) is settled by running again the few keys that need it
(:func:`analyse_keys`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from checkers.cycles import edges
from checkers.queue.check import OUT_SCHEMA, analyse_key
from checkers.queue.context import Context, build_context, op_stats
from checkers.queue.lag import KeyLags
from checkers.queue.timeline import Timeline
from checkers.spark.frames import NEMESIS
from checkers.spark.session import release_jvm_heap, release_unused_memory
from checkers.workloads.finders import FIELDS as WORKLOAD_FIELDS

RESETS_TYPE = pa.list_(pa.struct([("key", pa.int64()), ("from", pa.int64()), ("to", pa.int64())]))
ENDS_TYPE = pa.map_(pa.string(), pa.list_(pa.int64()))


def op_table(heads: pa.Table, fields: tuple[str, ...]) -> pa.Table:
    """The completed client ops, from each op's first row: op-level columns,
    the offset resets its consumer logged, the partition ends a final read
    reached and its producers' transaction timeout, the sends it saw
    refused, and per workload field in ``fields`` whether it carries it
    (``has_<field>``)."""
    client = pc.and_(
        pc.not_equal(heads.column("process"), NEMESIS), pc.not_equal(heads.column("type"), "invoke")
    )
    ops = heads.filter(client)
    # few ops carry extra fields: only theirs are parsed
    carried = np.flatnonzero(ops.column("extra").is_valid().to_numpy(zero_copy_only=False))
    extras = [orjson.loads(text) for text in ops.column("extra").drop_null().to_pylist()]

    # where each op's value sits among the carrying ops' (null: it carries none)
    slot = np.zeros(ops.num_rows, np.int64)
    slot[carried] = np.arange(len(carried))
    none = np.ones(ops.num_rows, bool)
    none[carried] = False
    slots = pa.array(slot, mask=none)

    def spread(values: list[Any], t: pa.DataType) -> pa.Array:
        """Values of the carrying ops, nulls for the others."""
        return pa.array(values, t).take(slots)

    def has(field: str) -> pa.Array:
        mask = np.zeros(ops.num_rows, bool)
        mask[carried[[field in e for e in extras]]] = True
        return pa.array(mask)

    return pa.table(
        {
            "index": ops.column("index"),
            "invoke_index": ops.column("pair_index"),
            "type": ops.column("type"),
            "process": ops.column("process"),
            "f": ops.column("f"),
            "time": ops.column("time"),
            "invoke_time": ops.column("pair_time"),
            "keys": ops.column("keys"),
            "rebalance_keys": ops.column("rebalance_keys"),
            "offset_resets": spread([e.get("offset_resets") for e in extras], RESETS_TYPE),
            "ends": spread(
                [None if (x := e.get("ends")) is None else list(x.items()) for e in extras],
                ENDS_TYPE,
            ),
            "txn_timeout_ms": spread([e.get("txn_timeout_ms") for e in extras], pa.int64()),
            "refused": spread([e.get("refused") for e in extras], pa.list_(pa.int64())),
            **{f"has_{f}": has(f) for f in fields},
        }
    )


@dataclass
class OpFacts:
    """What the driver knows from the ops alone, before any Spark job."""

    graph_ops: pa.Table  # the dependency graph's nodes (edges.op_intervals)
    fields: frozenset[str]  # the workload fields some op carries
    stats: dict[str, Any]
    timeline: Timeline | None
    ctx: Context

    @classmethod
    def of(cls, take_heads: Callable[[], pa.Table]) -> OpFacts:
        """From the op rows ``take_heads`` hands over (this call holds the only
        reference, so their memory goes back to the system before it returns:
        for 10M ops, a gigabyte)."""
        ops = op_table(take_heads(), WORKLOAD_FIELDS)
        stats, timeline = op_stats(ops)
        ctx = build_context(ops, timeline)
        fields = frozenset(f for f in WORKLOAD_FIELDS if pc.any(ops.column(f"has_{f}")).as_py())
        facts = cls(edges.op_intervals(ops), fields, stats, timeline, ctx)
        del ops
        release_unused_memory()
        return facts


@dataclass
class KeyedResults:
    """The per-key analyses' rows, split by kind, and the keys' ww and wr edges."""

    table: pa.Table
    ww: pa.Table
    wr: pa.Table
    _parts: dict[str, pa.Table] = field(default_factory=dict)

    def replace_keys(self, keys: np.ndarray, other: KeyedResults) -> KeyedResults:
        """These results, with ``keys``' taken from ``other``."""

        def merged(mine: pa.Table, theirs: pa.Table) -> pa.Table:
            kept = mine.filter(pc.invert(pc.is_in(mine.column("key"), pa.array(keys))))
            return pa.concat_tables([kept, theirs])

        return KeyedResults(
            merged(self.table, other.table), merged(self.ww, other.ww), merged(self.wr, other.wr)
        )

    def rows(self, kind: str) -> pa.Table:
        if not self._parts:
            kinds = self.table.column("kind")
            for k in pc.unique(kinds).to_pylist():
                self._parts[k] = self.table.filter(pc.equal(kinds, k))
        return self._parts.get(kind, self.table.slice(0, 0))

    @property
    def keys(self) -> int:
        return self.rows("_key").num_rows

    def cases(
        self, kinds: list[str]
    ) -> tuple[list[tuple[str, bool, int, str]], dict[str, dict[str, int]]]:
        """Case rows (kind, allowed, order, JSON) and exact counts per kind."""
        rows, counts = [], {}
        for kind in kinds:
            t = self.rows(kind)
            if not t.num_rows:
                continue
            is_count = t.column("case").is_null()
            c = t.filter(is_count)
            counts[kind] = {
                "total": int(pc.sum(c.column("a")).as_py()),
                "allowed": int(pc.sum(c.column("b")).as_py()),
            }
            s = t.filter(pc.invert(is_count))
            rows.extend(
                zip(
                    [kind] * s.num_rows,
                    s.column("allowed").to_pylist(),
                    s.column("ord").to_pylist(),
                    s.column("case").to_pylist(),
                    strict=True,
                )
            )
        return rows, counts

    def unseen_deltas(self) -> dict[int, dict[int, int]]:
        """{bucket: {key: change}} of the keys' unseen counts."""
        t = self.rows("_unseen")
        out: dict[int, dict[int, int]] = {}
        for k, b, d in zip(*(t.column(c).to_pylist() for c in ("key", "a", "b")), strict=True):
            out.setdefault(b, {})[k] = d
        return out

    def lags(self) -> list[KeyLags]:
        """Each key's lag maxima."""
        by_key: dict[int, KeyLags] = {}

        def of(k: int) -> KeyLags:
            return by_key.setdefault(k, KeyLags(k, {}, {}, None))

        for kind, field_name in (("_lag_p", "by_process"), ("_lag_b", "by_bucket")):
            t = self.rows(kind)
            for k, a, b in zip(*(t.column(c).to_pylist() for c in ("key", "a", "b")), strict=True):
                getattr(of(k), field_name)[a] = b
        t = self.rows("_lag_worst")
        for k, *w in zip(
            *(t.column(c).to_pylist() for c in ("key", "a", "b", "c", "d")), strict=True
        ):
            of(k).worst = tuple(w)
        return list(by_key.values())


IPC_OPTIONS = pa.ipc.IpcWriteOptions(compression="zstd")
PARTS = ("rows", "ww", "wr")


def _to_ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=IPC_OPTIONS) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _from_ipc(blobs: pa.ChunkedArray, keys: list[int] | None = None) -> list[pa.Table]:
    """The tables of a column of IPC blobs, read where they lie (no copy)."""
    tables = [pa.ipc.open_stream(b.as_buffer()).read_all() for b in blobs]
    if keys is None:
        return tables
    return [
        t.add_column(2, "key", pa.array(np.full(t.num_rows, k, np.int64)))
        for t, k in zip(tables, keys, strict=True)
    ]


def key_rows(mops: DataFrame) -> DataFrame:
    """The micro-op columns a key's analyses read, partitioned by key and
    cached. Materialized at once, so the scan and the shuffle run while the
    driver still works out the op facts; :func:`analyse_keys` then groups
    without another shuffle. The caller unpersists it."""
    rows = (
        mops.select(
            "index",
            "mop_index",
            (F.col("mop") == "poll").cast("byte").alias("mop"),  # key_log.SEND, POLL
            "key",
            "offset",
            "value",
            "pos",
        )
        .repartition("key")
        .cache()
    )
    rows.count()
    return rows


def _run(spark: SparkSession, rows: DataFrame, ctx: Context, cap: int, big: bool) -> KeyedResults:
    """Each key's results cross back as compressed Arrow IPC blobs: Spark moves
    a few dozen binary values instead of converting a million edge rows twice.
    For a ``big`` history the JVM gives its heap back before they are decoded."""
    bc = spark.sparkContext.broadcast(ctx)

    def run(table: pa.Table) -> pa.Table:
        found = analyse_key(table, bc.value, cap)
        out = pa.table(
            {"key": table.column("key").slice(0, 1)}
            | {part: [_to_ipc(getattr(found, part))] for part in PARTS}
        )
        # a worker stays up after its last key, while the driver searches
        # the graph: without this it would keep that key's memory
        release_unused_memory()
        return out

    schema = "key bigint, " + ", ".join(f"{part} binary" for part in PARTS)
    try:
        blobs = rows.groupBy("key").applyInArrow(run, schema).toArrow()
    finally:
        bc.destroy()
    if big:
        release_jvm_heap(spark)
    keys = blobs.column("key").to_pylist()
    rows_, ww, wr = (_from_ipc(blobs.column(p), None if p == "rows" else keys) for p in PARTS)
    return KeyedResults(
        pa.concat_tables(rows_) if rows_ else OUT_SCHEMA.empty_table(),
        pa.concat_tables(ww) if ww else edges.EMPTY_WW,
        pa.concat_tables(wr) if wr else edges.EMPTY_WR,
    )


def analyse_keys(
    spark: SparkSession, rows: DataFrame, ctx: Context, cap: int, *, big: bool = False
) -> tuple[KeyedResults, np.ndarray]:
    """Runs :func:`analyse_key` on every key's rows (:func:`key_rows`);
    returns the results and the info ops that must have committed.

    A key first knows only which info ops were seen on it. An info op seen on
    one key committed on every key it sent to, so the keys it sent to
    without being seen there run again, knowing (in all but anomalous
    histories, where a transaction shows torn, there are none)."""
    found = _run(spark, rows, ctx, cap, big)
    info = found.rows("_info")
    op, here = info.column("a").to_numpy(), info.column("b").to_numpy() == 1
    seen = np.unique(op[here])
    torn = ~here & np.isin(op, seen)
    again = np.unique(info.column("key").to_numpy()[torn])
    if len(again):
        ctx = replace(ctx, seen_info=seen)
        redone = _run(spark, rows.where(F.col("key").isin(again.tolist())), ctx, cap, big)
        found = found.replace_keys(again, redone)
    return found, seen
