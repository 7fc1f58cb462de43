"""The history as Spark frames: completions, micro-ops, committed writers and
the per-key version order every analysis indexes into.

Built once per check and cached, because nearly every case finder joins
against the same few frames. Column names follow the flattened history table
(``checkers.history`` writes it; one row per micro-op element).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

NEMESIS = "nemesis"
READ_FS = ("poll", "txn")
GRAPH_FS = ("send", "poll", "txn")
RESET_FS = ("assign", "subscribe")

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


@dataclass
class Frames:
    """Lazily built, cached frames over one flattened history."""

    raw: DataFrame
    _memo: dict[str, DataFrame] = field(default_factory=dict)

    def shared(self, name: str, build: Callable[[Frames], DataFrame]) -> DataFrame:
        """A frame several finders derive from, built and cached once per check."""
        if name not in self._memo:
            self._memo[name] = build(self).cache()
        return self._memo[name]

    @cached_property
    def completions(self) -> DataFrame:
        """Client completion rows (ok/fail/info); invocations and nemesis ops dropped."""
        cols = [F.col(c).cast(t).alias(c) for c, t in REQUIRED_COLUMNS.items()]
        return (
            self.raw.select(*cols)
            .where((F.col("process") != NEMESIS) & (F.col("type") != "invoke"))
            .withColumnRenamed("pair_time", "invoke_time")
        )

    @cached_property
    def ops(self) -> DataFrame:
        """One row per completed client op: op-level columns only."""
        return (
            self.completions.where(F.col("row") == 0)
            .select(
                "index",
                "type",
                "process",
                "f",
                "time",
                "invoke_time",
                F.col("pair_index").alias("invoke_index"),
                "keys",
                "rebalance_keys",
            )
            .cache()
        )

    @cached_property
    def mops(self) -> DataFrame:
        """Every send and every polled record, with the dense index of its offset."""
        raw = self.completions.where(
            F.col("mop").isin("send", "poll")
            & F.col("key").isNotNull()
            & F.col("value").isNotNull()
        )
        return raw.select(
            "index",
            "type",
            "process",
            "f",
            "time",
            "mop_index",
            "mop",
            "key",
            "offset",
            "value",
            "pos",
        ).cache()

    @cached_property
    def reads(self) -> DataFrame:
        return self.mops.where(F.col("mop") == "poll")

    @cached_property
    def ok_read_values(self) -> DataFrame:
        """Distinct (key, value) pairs some OK op polled."""
        return self.reads.where(F.col("type") == "ok").select("key", "value").distinct().cache()

    @cached_property
    def sends(self) -> DataFrame:
        """Sends, with ``committed``: the op is OK, or it is info and an OK poll saw one
        of its sends (Jepsen's must-have-committed?).

        A value sent by more than one op (an eos copy retried after an info copy
        re-sends what it copied) proves an info send only where it was read: at
        that send's offset, when the send knows it."""
        sends = self.mops.where(F.col("mop") == "send")
        senders = sends.groupBy("key", "value").agg(F.countDistinct("index").alias("senders"))
        info = sends.where(F.col("type") == "info").join(senders, ["key", "value"])
        by_value = (F.col("senders") == 1) | F.col("offset").isNull()
        ok_reads = self.reads.where(F.col("type") == "ok")
        seen_info = (
            info.where(by_value)
            .join(self.ok_read_values, ["key", "value"], "left_semi")
            .select("index")
            .unionByName(
                info.where(~by_value)
                .join(ok_reads.select("key", "value", "offset"), ["key", "value", "offset"])
                .select("index")
            )
            .distinct()
            .withColumn("seen", F.lit(True))
        )
        return (
            sends.join(F.broadcast(seen_info), "index", "left")
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

    @cached_property
    def by_index(self) -> DataFrame:
        """(key, idx) → one value and offset (the smallest value if an offset conflicts)."""
        return (
            self.versions.groupBy("key", "idx")
            .agg(F.min(F.struct("value", "offset")).alias("v"))
            .select("key", "idx", "v.value", "v.offset")
        )

    @cached_property
    def positioned(self) -> DataFrame:
        """Micro-ops with ``idx``: from their offset when known, else from the first
        index their value appears at (sends with unknown offsets)."""
        vi = self.value_index.select("key", "value", F.col("first").alias("vidx"))
        return (
            self.mops.join(self.offset_index, ["key", "offset"], "left")
            .join(vi, ["key", "value"], "left")
            .withColumn("idx", F.coalesce("idx", "vidx"))
            .drop("vidx")
            .cache()
        )

    @cached_property
    def segments(self) -> DataFrame:
        """Per op: which assign/subscribe segment of its process it falls in.

        ``seg`` counts the process's assign/subscribe ops (ok or info) up to and
        including this one; ``via`` and ``assigned`` describe the latest of them.
        """
        w = (
            Window.partitionBy("process")
            .orderBy("index")
            .rowsBetween(Window.unboundedPreceding, Window.currentRow)
        )
        reset = F.col("f").isin(*RESET_FS) & F.col("type").isin("ok", "info")
        return (
            self.ops.withColumn("is_reset", reset.cast("int"))
            .withColumn("seg", F.sum("is_reset").over(w))
            .withColumn("via", F.last(F.when(reset, F.col("f")), ignorenulls=True).over(w))
            .withColumn("assigned", F.last(F.when(reset, F.col("keys")), ignorenulls=True).over(w))
            .select("index", "seg", "via", "assigned")
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
            "positioned",
            "segments",
        ):
            if name in self.__dict__:
                self.__dict__[name].unpersist()
