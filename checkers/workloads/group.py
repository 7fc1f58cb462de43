"""Consumer-group checks over the ``group`` workload's commits and rebalances.

Each completion of a group member may carry ``commit`` (``{"offsets": {key:
next offset}, "member", "type": ok|fail|info}``: what the op committed after
its polls) and ``rebalance_log`` (``[{"type": "assigned"|"revoked", "keys"}]``:
the rebalance callbacks that ran inside the op, in order).

Times come from the ops: a callback or commit inside an op happened between
its invocation and its completion, so only orders the history proves are
used.

* ``committed-offset-regression`` — an OK commit of key ``k`` to offset
  ``o2`` whose op began after another OK commit of ``k`` to ``o1 > o2`` had
  completed: the group's position went backwards (the workloads never
  reset offsets on purpose, so nothing excuses it).
* ``split-ownership`` — two processes own key ``k`` at the same time. A
  process certainly owns ``k`` from the *completion* of the op whose log
  assigned it until the *invocation* of the op whose log revoked it, or of
  its next ``assign`` op (which leaves the group), or else of its last op;
  two such intervals of different processes that overlap (the later start
  is before the earlier end) are a split.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from checkers.spark.frames import Frames, op_ref, prefixed
from checkers.workloads.extras import with_field

COMMIT = "struct<offsets: map<string, bigint>, member: string, type: string, error: string>"
REBALANCE = "array<struct<type: string, keys: array<bigint>>>"
OP_COLS = ["index", "process", "time", "type", "f", "invoke_time"]


def commits(fr: Frames) -> DataFrame:
    """One row per (op, key) an OK commit covered: op columns, key, offset."""
    return fr.shared(
        "group-commits",
        lambda fr: (
            with_field(fr, "commit", lambda c: F.from_json(c, COMMIT))
            .where(F.col("commit.type") == "ok")
            .select(*OP_COLS, F.explode("commit.offsets").alias("k", "offset"))
            .select(*OP_COLS, F.col("k").cast("bigint").alias("key"), "offset")
        ),
    )


def committed_offset_regression(fr: Frames) -> DataFrame:
    """See the module docstring. Per key, commits and their invocations in
    time order (an invocation first on a tie: ``before`` must be strict);
    each invocation sees the highest commit completed before it."""
    c = commits(fr)
    ref = F.struct("offset", op_ref().alias("op"))
    none = F.lit(None).cast(c.select(ref.alias("r")).schema["r"].dataType)
    done = c.select("key", F.col("time").alias("t"), ref.alias("prior"), none.alias("me"))
    begun = c.select("key", F.col("invoke_time").alias("t"), none.alias("prior"), ref.alias("me"))
    events = done.withColumn("is_done", F.lit(1)).unionByName(begun.withColumn("is_done", F.lit(0)))
    before = (
        Window.partitionBy("key").orderBy("t", "is_done").rowsBetween(Window.unboundedPreceding, -1)
    )
    return (
        events.withColumn("best", F.max("prior").over(before))
        .where(F.col("me").isNotNull() & (F.col("me.offset") < F.col("best.offset")))
        .select(
            "key",
            F.col("me.op").alias("op"),
            F.col("me.offset").alias("offset"),
            F.col("best.op").alias("prev_op"),
            F.col("best.offset").alias("prev_offset"),
        )
    )


def ownership(fr: Frames) -> DataFrame:
    """Certain ownership intervals: process, key, start, end, the assigning
    op and what ended it (module docstring)."""
    logged = with_field(fr, "rebalance_log", lambda c: F.from_json(c, REBALANCE)).select(
        *OP_COLS, F.posexplode("rebalance_log").alias("pos", "event")
    )
    events = logged.select(
        *OP_COLS, "pos", F.col("event.type").alias("event"), F.explode("event.keys").alias("key")
    )
    later = (
        Window.partitionBy("process", "key")
        .orderBy("index", "pos")
        .rowsBetween(1, Window.unboundedFollowing)
    )
    revocation = F.when(F.col("event") == "revoked", F.struct(op_ref().alias("op"), "invoke_time"))
    assigned = events.withColumn(
        "revoked", F.first(revocation, ignorenulls=True).over(later)
    ).where(F.col("event") == "assigned")
    leaves = (
        fr.ops.where(F.col("f") == "assign")
        .groupBy("process")
        .agg(F.collect_list(F.struct("index", "invoke_time")).alias("leaves"))
    )
    last = fr.ops.groupBy("process").agg(F.max("invoke_time").alias("last_invoke"))
    ended_by_leave = F.expr(
        "aggregate(filter(leaves, l -> l.index > index), CAST(NULL AS BIGINT), "
        "(acc, l) -> IF(acc IS NULL OR l.invoke_time < acc, l.invoke_time, acc))"
    )
    return (
        assigned.join(leaves, "process", "left")
        .join(last, "process")
        .withColumn("leave", ended_by_leave)
        .select(
            "process",
            "key",
            F.col("time").alias("start"),
            F.least("revoked.invoke_time", "leave", "last_invoke").alias("end"),
            op_ref().alias("assigned_by"),
            F.col("revoked.op").alias("revoked_by"),
        )
        .where(F.col("start") < F.col("end"))
    )


def split_ownership(fr: Frames) -> DataFrame:
    """Pairs of overlapping ownership intervals of one key (module docstring)."""
    own = ownership(fr)
    cols = ["process", "key", "start", "end", "assigned_by", "revoked_by"]
    a, b = prefixed(own, "a_", cols), prefixed(own, "b_", cols)
    return a.join(
        b,
        (F.col("a_key") == F.col("b_key"))
        & (F.col("a_process") < F.col("b_process"))
        & (F.greatest("a_start", "b_start") < F.least("a_end", "b_end")),
    ).select(
        F.col("a_key").alias("key"),
        F.struct(*[F.col(f"a_{c}").alias(c) for c in cols if c != "key"]).alias("first"),
        F.struct(*[F.col(f"b_{c}").alias(c) for c in cols if c != "key"]).alias("second"),
        F.greatest("a_start", "b_start").alias("from"),
        F.least("a_end", "b_end").alias("until"),
    )
