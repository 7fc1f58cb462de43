"""The queue analyses on Spark: the completed ops collected once for the
op-level facts, which info ops must have committed, then one grouped map that
hands each key's rows to :func:`checkers.queue.check.analyse_key`.

One shuffle by key and numpy per key replace a plan of dozens of joins and
windows: every analysis but one looks at a single key, and the one that
does not (an info transaction counts as committed once any of its sends was
read, on any key) is a broadcast join done first.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from checkers.queue.check import OUT_SCHEMA, analyse_key
from checkers.queue.context import Context
from checkers.queue.lag import KeyLags
from checkers.spark.frames import NEMESIS


def op_table(heads: pa.Table, fields: tuple[str, ...]) -> pa.Table:
    """The completed client ops, from each op's first row: op-level columns,
    the offset resets its consumer logged, and per workload field in
    ``fields`` whether it carries it (``has_<field>``)."""
    client = pc.and_(
        pc.not_equal(heads.column("process"), NEMESIS), pc.not_equal(heads.column("type"), "invoke")
    )
    ops = heads.filter(client)
    extras = [orjson.loads(e) if e is not None else {} for e in ops.column("extra").to_pylist()]
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
            "offset_resets": pa.array(
                [e.get("offset_resets") for e in extras],
                pa.list_(
                    pa.struct([("key", pa.int64()), ("from", pa.int64()), ("to", pa.int64())])
                ),
            ),
            **{f"has_{f}": pa.array([f in e for e in extras], pa.bool_()) for f in fields},
        }
    )


@dataclass
class KeyedResults:
    """The per-key analyses' rows, split by kind."""

    table: pa.Table
    _parts: dict[str, pa.Table] = field(default_factory=dict)

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

    def columns(self, kind: str, names: dict[str, str]) -> pa.Table:
        """Rows of ``kind`` with their generic columns renamed ({column: name})."""
        t = self.rows(kind)
        return pa.table({new: t.column(old) for old, new in names.items()})


def _run(spark: SparkSession, mops: DataFrame, ctx: Context, cap: int) -> pa.Table:
    bc = spark.sparkContext.broadcast(ctx)
    schema = ", ".join(f"`{f.name}` {SPARK_TYPES[str(f.type)]}" for f in OUT_SCHEMA)

    def run(table: pa.Table) -> pa.Table:
        return analyse_key(table, bc.value, cap)

    try:
        return mops.groupBy("key").applyInArrow(run, schema).toArrow()
    finally:
        bc.destroy()


def analyse_keys(
    spark: SparkSession, mops: DataFrame, ctx: Context, cap: int
) -> tuple[KeyedResults, np.ndarray]:
    """Runs :func:`analyse_key` on every key's rows; returns the results and
    the info ops that must have committed.

    A key first knows only which info ops were seen on it. An info op seen on
    one key committed on every key it sent to, so the keys it sent to
    without being seen there run again, knowing (in all but anomalous
    histories, where a transaction shows torn, there are none)."""
    table = _run(spark, mops, ctx, cap)
    info = table.filter(pc.equal(table.column("kind"), "_info"))
    op, here = info.column("a").to_numpy(), info.column("b").to_numpy() == 1
    seen = np.unique(op[here])
    torn = ~here & np.isin(op, seen)
    again = np.unique(info.column("key").to_numpy()[torn])
    if len(again):
        ctx = replace(ctx, seen_info=seen)
        redone = _run(spark, mops.where(F.col("key").isin(again.tolist())), ctx, cap)
        kept = table.filter(pc.invert(pc.is_in(table.column("key"), pa.array(again))))
        table = pa.concat_tables([kept, redone])
    return KeyedResults(table), seen


SPARK_TYPES = {"string": "string", "int64": "bigint", "bool": "boolean"}
