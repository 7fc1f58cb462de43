"""Dependency edges between transactions, computed in Spark and collected as
Arrow columns.

* ww: the writers of consecutive records of a key's version order;
* wr: the writer of a value → every other op that polled it;
* process: consecutive ops of one process;
* realtime: ``a`` completed before ``b`` was invoked; built on the driver from
  each op's invoke and completion positions as a transitive reduction (see
  :func:`checkers.cycles.graph.realtime_edges`), so it stays linear.

Graph nodes are OK and info send/poll/txn ops; failed ops did not happen.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from checkers.spark.frames import GRAPH_FS, Frames

WW, WR, PROCESS, REALTIME = 1, 2, 4, 8
REL_NAMES = {WW: "ww", WR: "wr", PROCESS: "process", REALTIME: "realtime"}
EMPTY_WW = pa.table(
    {c: pa.array([], pa.int64()) for c in ("src", "dst", "key", "v1", "v2", "o1", "o2")}
)


def graph_ops(fr: Frames) -> DataFrame:
    return fr.ops.where(F.col("f").isin(*GRAPH_FS) & F.col("type").isin("ok", "info"))


def _committed_writers(fr: Frames) -> DataFrame:
    return fr.writers.where(F.col("committed")).select(
        "key", "value", F.col("writer.index").alias("writer")
    )


def wr_edges(fr: Frames) -> DataFrame:
    readers = fr.reads.where(F.col("type").isin("ok", "info")).select(
        "key", "value", "offset", F.col("index").alias("dst")
    )
    return (
        readers.join(_committed_writers(fr), ["key", "value"])
        .where(F.col("writer") != F.col("dst"))
        .select(F.col("writer").alias("src"), "dst", "key", "value", "offset")
        .dropDuplicates(["src", "dst"])
    )


def ww_edges(fr: Frames) -> DataFrame:
    order = fr.by_index.join(_committed_writers(fr), ["key", "value"], "left")
    w = Window.partitionBy("key").orderBy("idx")
    return (
        order.withColumn("src", F.lag("writer").over(w))
        .withColumn("v1", F.lag("value").over(w))
        .withColumn("o1", F.lag("offset").over(w))
        .where(F.col("src").isNotNull() & F.col("writer").isNotNull())
        .where(F.col("src") != F.col("writer"))
        .select(
            "src",
            F.col("writer").alias("dst"),
            "key",
            "v1",
            F.col("value").alias("v2"),
            "o1",
            F.col("offset").alias("o2"),
        )
        .dropDuplicates(["src", "dst"])
    )


def op_intervals(fr: Frames) -> DataFrame:
    """Per graph op: history positions of its invocation and completion, process."""
    return graph_ops(fr).select(
        "index", "invoke_index", "type", "process", "time", "invoke_time", "f"
    )


def collect(df: DataFrame) -> pa.Table:
    return df.toArrow()
