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
* ``resume-skip`` — a process assigned key ``k`` first polls it (in a later
  op, with no other rebalance of ``k`` in between) from offset ``f``, while
  every commit of ``k`` that could have been in effect (ok or info, invoked
  before that poll completed) is at most ``m`` (0 without any: the
  beginning), and records exist at offsets in ``[m, f)``: it resumed past
  the group's committed position, skipping what nobody acknowledged reading.
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

from checkers.kind import Case, Kind, PerWorkload
from checkers.spark.frames import Frames, op_ref, prefixed
from checkers.wording import op_name
from checkers.workloads.extras import with_field

COMMIT = "struct<offsets: map<string, bigint>, member: string, type: string, error: string>"
REBALANCE = "array<struct<type: string, keys: array<bigint>>>"
OP_COLS = ["index", "process", "time", "type", "f", "invoke_time"]


def commits(fr: Frames) -> DataFrame:
    """One row per (op, key) a commit covered: op columns, ``outcome`` (the
    commit's ok / fail / info), key and offset."""
    return fr.shared(
        "group-commits",
        lambda fr: (
            with_field(fr, "commit", lambda c: F.from_json(c, COMMIT))
            .select(
                *OP_COLS,
                F.col("commit.type").alias("outcome"),
                F.explode("commit.offsets").alias("k", "offset"),
            )
            .select(*OP_COLS, "outcome", F.col("k").cast("bigint").alias("key"), "offset")
        ),
    )


def rebalances(fr: Frames) -> DataFrame:
    """One row per key per logged rebalance event: op columns, ``pos`` (the
    event's place in the op's log), ``event`` and key."""
    return fr.shared(
        "group-rebalances",
        lambda fr: (
            with_field(fr, "rebalance_log", lambda c: F.from_json(c, REBALANCE))
            .select(*OP_COLS, F.posexplode("rebalance_log").alias("pos", "e"))
            .select(
                *OP_COLS, "pos", F.col("e.type").alias("event"), F.explode("e.keys").alias("key")
            )
        ),
    )


def member_rebalances(fr: Frames) -> DataFrame:
    """Rebalance events, in histories whose consumers commit (the ``group``
    workload). A ``queue`` history's subscribers log rebalances too, but are not
    checked as a group's members: they commit nothing to resume from, and
    simulated histories give their subscribers no exclusive ownership."""
    group = with_field(fr, "commit", lambda c: c).select(F.lit(1).alias("g")).limit(1)
    return rebalances(fr).crossJoin(F.broadcast(group)).drop("g")


def committed_offset_regression(fr: Frames) -> DataFrame:
    """See the module docstring. Per key, commits and their invocations in
    time order (an invocation first on a tie: ``before`` must be strict);
    each invocation sees the highest commit completed before it."""
    c = commits(fr).where(F.col("outcome") == "ok")
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
    events = member_rebalances(fr)
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


def resume_skip(fr: Frames) -> DataFrame:
    """See the module docstring."""
    ev = member_rebalances(fr)
    polled = fr.reads.groupBy("index", "process", "key").agg(
        F.min("offset").alias("first"), F.max("time").alias("r_time")
    )
    assigned = (
        ev.where(F.col("event") == "assigned")
        .select("process", "key", F.col("index").alias("a_index"))
        .join(
            polled.select(F.col("index").alias("a_index"), "key"), ["a_index", "key"], "left_anti"
        )
    )
    first_read = (
        assigned.join(polled, ["process", "key"])
        .where(F.col("index") > F.col("a_index"))
        .groupBy("process", "key", "a_index")
        .agg(F.min(F.struct("index", "first", "r_time")).alias("r"))
        .select("process", "key", "a_index", "r.*")
    )
    other = ev.select(F.col("process").alias("e_p"), F.col("key").alias("e_k"), "index")
    resumed = first_read.alias("r").join(
        other.alias("e"),
        (F.col("r.process") == F.col("e_p"))
        & (F.col("r.key") == F.col("e_k"))
        & (F.col("e.index") > F.col("r.a_index"))
        & (F.col("e.index") <= F.col("r.index")),
        "left_anti",
    )
    c = commits(fr).where(F.col("outcome").isin("ok", "info"))
    c = c.select(
        "key",
        F.col("invoke_time").alias("c_invoke"),
        F.struct("offset", op_ref().alias("c_op")).alias("c"),
    )
    in_effect = F.when(F.col("c_invoke") < F.col("r_time"), F.col("c"))
    bound = (
        resumed.join(c, "key", "left")
        .groupBy("process", "key", "a_index", "index", "first")
        .agg(F.max(in_effect).alias("b"))
    )
    return (
        bound.join(fr.offset_index, "key")
        .where(
            (F.col("offset") >= F.coalesce("b.offset", F.lit(0)))
            & (F.col("offset") < F.col("first"))
        )
        .groupBy("index", "key", "a_index", "first", "b")
        .agg(
            F.count("*").alias("skipped_count"),
            F.slice(F.sort_array(F.collect_list("offset")), 1, 8).alias("skipped"),
        )
        .join(fr.ops.select("index", "process", "time", "type", "f"), "index")
        .select(
            "key",
            op_ref().alias("op"),
            F.col("a_index").alias("assigned_index"),
            F.col("first").alias("offset"),
            F.coalesce("b.offset", F.lit(0)).alias("committed"),
            F.col("b.c_op").alias("commit_op"),
            "skipped_count",
            "skipped",
        )
    )


def _ms(ns: object) -> str:
    return f"{ns / 1e6:.1f} ms" if isinstance(ns, int | float) else "an unknown time"


def _explain_regression(c: Case) -> str:
    return (
        f"{op_name(c['prev_op'])} committed key {c['key']} at offset {c['prev_offset']} and "
        f"completed before {op_name(c['op'])} began, which then committed key {c['key']} at "
        f"offset {c['offset']}: the group's committed offset went backwards."
    )


def _owner(o: Case) -> str:
    end = (
        f"until {op_name(o['revoked_by'])} revoked it"
        if o.get("revoked_by")
        else "with no revocation logged before its last op"
    )
    return f"process {o['process']} (assigned in {op_name(o['assigned_by'])}, {end})"


def _explain_split(c: Case) -> str:
    return (
        f"Key {c['key']} had two owners at once: {_owner(c['first'])} and "
        f"{_owner(c['second'])} both held it from {_ms(c['from'])} to {_ms(c['until'])}. "
        "A process owns a key from the completion of the op whose rebalance log assigned "
        "it until the invocation of the op that logged its revocation, of its next assign, "
        "or of its last op."
    )


def _explain_resume(c: Case) -> str:
    by = f" ({op_name(c['commit_op'])})" if c.get("commit_op") else " (none: the beginning)"
    return (
        f"{op_name(c['op'])} first polled key {c['key']} after its assignment in op "
        f"{c['assigned_index']} from offset {c['offset']}, but the group's committed offset "
        f"was at most {c['committed']}{by}: it skipped {c['skipped_count']} record(s) at "
        f"offsets {', '.join(map(str, c['skipped']))} that no member acknowledged reading."
    )


COMMITTED_OFFSET_REGRESSION = Kind(
    "committed-offset-regression",
    PerWorkload("commit", committed_offset_regression),
    _explain_regression,
    "A consumer group's committed offset for a partition went backwards: a commit "
    "completed, then a later one committed an earlier offset. A member that resumes from "
    "it reads again messages the group had already processed.",
)
SPLIT_OWNERSHIP = Kind(
    "split-ownership",
    PerWorkload("commit", split_ownership),
    _explain_split,
    "Two members of a consumer group owned the same partition at the same time, as their "
    "rebalance callbacks logged it: both may process, and commit, its messages.",
)
RESUME_SKIP = Kind(
    "resume-skip",
    PerWorkload("commit", resume_skip),
    _explain_resume,
    "A group member assigned a partition started reading past the group's committed "
    "offset: the messages in between were skipped, and no member had acknowledged "
    "reading them.",
)
