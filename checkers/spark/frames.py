"""The history as Spark frames: completions, micro-ops, committed writers and
the per-key version order the workload checks (``checkers.workloads``) join
against.

Built once per check and cached, because those finders share the same few
frames. Column names follow the flattened history table (``history``
writes it; one row per micro-op element).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from history.schema import ROW_COLUMNS

NEMESIS = "nemesis"

REQUIRED_COLUMNS = {
    "index": "bigint",
    "time": "bigint",
    "type": "string",
    "process": "string",
    "f": "string",
    "pair_index": "bigint",
    "pair_time": "bigint",
    "row": "int",
    "mop_index": "int",
    "mop": "string",
    "key": "bigint",
    "offset": "bigint",
    "value": "bigint",
    "pos": "int",
    "keys": "array<bigint>",
    "rebalance_keys": "array<bigint>",
}


def op_ref(prefix: str = "") -> Column:
    """A compact reference to an op, as every anomaly instance carries it."""
    return F.struct(
        F.col(f"{prefix}index").alias("index"),
        F.col(f"{prefix}process").alias("process"),
        F.col(f"{prefix}time").alias("time"),
        F.col(f"{prefix}type").alias("type"),
        F.col(f"{prefix}f").alias("f"),
    )


def prefixed(df: DataFrame, prefix: str, cols: list[str]) -> DataFrame:
    return df.select(*[F.col(c).alias(prefix + c) for c in cols])


def completions(raw: DataFrame) -> DataFrame:
    """Client completion rows (ok/fail/info), typed; invocations and nemesis
    ops dropped."""
    cols = [F.col(c).cast(t).alias(c) for c, t in REQUIRED_COLUMNS.items()]
    return (
        raw.select(*cols)
        .where((F.col("process") != NEMESIS) & (F.col("type") != "invoke"))
        .withColumnRenamed("pair_time", "invoke_time")
    )


OP_COLUMNS = ("index", "type", "process", "f", "time", "invoke_time")  # of a completion
MOP_COLUMNS = (*OP_COLUMNS, *ROW_COLUMNS)


def micro_ops(raw: DataFrame) -> DataFrame:
    """Every send and every polled record."""
    return (
        completions(raw)
        .where(
            F.col("mop").isin("send", "poll")
            & F.col("key").isNotNull()
            & F.col("value").isNotNull()
        )
        .select(*MOP_COLUMNS)
    )


@dataclass
class Frames:
    """Lazily built, cached frames over one flattened history."""

    raw: DataFrame
    seen_info: np.ndarray  # info ops that must have committed (checkers.queue.run)
    _memo: dict[str, DataFrame] = field(default_factory=dict)

    def shared(self, name: str, build: Callable[[Frames], DataFrame]) -> DataFrame:
        """A frame several finders derive from, built and cached once per check."""
        if name not in self._memo:
            self._memo[name] = build(self).cache()
        return self._memo[name]

    @cached_property
    def completions(self) -> DataFrame:
        return completions(self.raw)

    @cached_property
    def ops(self) -> DataFrame:
        """One row per completed client op: op-level columns only."""
        return (
            self.completions.where(F.col("row") == 0)
            .select(
                *OP_COLUMNS,
                F.col("pair_index").alias("invoke_index"),
                "keys",
                "rebalance_keys",
            )
            .cache()
        )

    @cached_property
    def mops(self) -> DataFrame:
        return micro_ops(self.raw).cache()

    @cached_property
    def reads(self) -> DataFrame:
        return self.mops.where(F.col("mop") == "poll")

    @cached_property
    def ok_read_values(self) -> DataFrame:
        """Distinct (key, value) pairs some OK op polled."""
        return self.reads.where(F.col("type") == "ok").select("key", "value").distinct().cache()

    @cached_property
    def sends(self) -> DataFrame:
        """Sends, with ``committed``: the op is OK, or it is info and an OK poll
        saw one of its sends (on any key: ``seen_info``)."""
        seen = self.raw.sparkSession.createDataFrame(
            pa.table({"index": pa.array(self.seen_info, pa.int64())})
        ).withColumn("seen", F.lit(True))
        return (
            self.mops.where(F.col("mop") == "send")
            .join(F.broadcast(seen), "index", "left")
            .withColumn(
                "committed", (F.col("type") == "ok") | F.coalesce(F.col("seen"), F.lit(False))
            )
            .drop("seen")
            .cache()
        )

    @cached_property
    def writers(self) -> DataFrame:
        """(key, value) → the op that sent it (the earliest that must have committed,
        should values repeat)."""
        w = Window.partitionBy("key", "value").orderBy(F.col("committed").desc(), "index")
        return (
            self.sends.withColumn("n", F.row_number().over(w))
            .where(F.col("n") == 1)
            .select(
                "key",
                "value",
                "committed",
                F.col("offset").alias("w_offset"),
                op_ref().alias("writer"),
            )
            .cache()
        )

    @cached_property
    def versions(self) -> DataFrame:
        """Distinct (key, offset, value, idx): every poll of any op type, plus sends
        of ops that must have committed; ``idx`` is the dense index of the offset."""
        polled = self.reads.select("key", "offset", "value")
        sent = self.sends.where(F.col("committed") & F.col("offset").isNotNull()).select(
            "key", "offset", "value"
        )
        kov = polled.unionByName(sent).where(F.col("offset").isNotNull()).distinct()
        # dense_rank counts distinct offsets, so rows sharing an offset share
        # its index: no separate distinct-and-join of the offsets is needed.
        by_key = Window.partitionBy("key").orderBy("offset")
        return kov.withColumn("idx", F.dense_rank().over(by_key) - 1).cache()

    @cached_property
    def offset_index(self) -> DataFrame:
        return self.versions.select("key", "offset", "idx").distinct()

    @cached_property
    def value_index(self) -> DataFrame:
        """(key, value) → first and last dense index it appears at, and its offsets."""
        return (
            self.versions.groupBy("key", "value")
            .agg(
                F.min("idx").alias("first"),
                F.max("idx").alias("last"),
                F.sort_array(F.collect_set("offset")).alias("offsets"),
            )
            .cache()
        )

    def unpersist(self) -> None:
        for df in self._memo.values():
            df.unpersist()
        for name in (
            "ops",
            "mops",
            "ok_read_values",
            "sends",
            "writers",
            "versions",
            "value_index",
        ):
            if name in self.__dict__:
                self.__dict__[name].unpersist()
