"""Exactly-once copying, checked as Kafka's own EOS system test does.

The ``eos`` workload copies input key ``k`` to output key ``k + n``; each
copy op carries ``output_shift: n``, so input keys are those below ``n``.
Its output must equal its input: every committed input record that a
committed copy consumed (its offset at or below the highest input offset an
OK copy polled) appears in the output (``eos-lost``), and no input record
appears in the output at more than one offset (``eos-duplicate``). Output
records are what OK read_committed polls returned, plus the sends of copies
that must have committed.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.kind import Case, Kind, PerWorkload
from checkers.spark.frames import Frames, op_ref
from checkers.wording import op_name
from checkers.workloads.extras import with_field

SHOWN = 8


def _copies(fr: Frames) -> DataFrame:
    """(index, shift) of every completed copy op."""
    return fr.shared(
        "eos-copies",
        lambda fr: with_field(fr, "output_shift", lambda c: c.cast("bigint")).select(
            "index", F.col("output_shift").alias("shift")
        ),
    )


def _shifted(fr: Frames, df: DataFrame) -> DataFrame:
    """``df`` with column ``shift`` (one value per history; no rows when the
    history has no copies), joined without a separate Spark job."""
    shift = _copies(fr).agg(F.max("shift").alias("shift")).where(F.col("shift").isNotNull())
    return df.crossJoin(F.broadcast(shift))


def eos_lost(fr: Frames) -> DataFrame:
    """Committed input records an OK copy consumed past but no OK poll of
    the output key ever returned."""
    ok_copies = _copies(fr).join(fr.ops.where(F.col("type") == "ok").select("index"), "index")
    consumed = (
        fr.reads.join(ok_copies, "index")
        .where(F.col("key") < F.col("shift"))
        .groupBy("index", "key")
        .agg(F.max("offset").alias("upto"))
    )
    committed = (
        _shifted(
            fr,
            fr.writers.where(F.col("committed"))
            .select("key", "value")
            .unionByName(fr.ok_read_values)
            .distinct(),
        )
        .where(F.col("key") < F.col("shift"))
        .join(fr.value_index.select("key", "value", "offsets"), ["key", "value"])
        .withColumn("offset", F.col("offsets")[0])
    )
    copied = _shifted(fr, fr.ok_read_values).select(
        (F.col("key") - F.col("shift")).alias("key"), "value"
    )
    missing = committed.join(copied, ["key", "value"], "left_anti")
    copiers = consumed.join(fr.ops.select("index", "process", "time", "type", "f"), "index")
    return (
        missing.join(copiers, "key")
        .where(F.col("upto") >= F.col("offset"))
        .groupBy("key", "value", "offset", "shift")
        .agg(F.min(F.struct(op_ref().alias("op"), "upto")).alias("c"))
        .join(fr.writers.select("key", "value", "writer"), ["key", "value"], "left")
        .select(
            "key",
            "value",
            "offset",
            (F.col("key") + F.col("shift")).alias("output_key"),
            F.col("c.op").alias("op"),
            F.col("c.upto").alias("consumed_upto"),
            "writer",
        )
    )


def eos_duplicate(fr: Frames) -> DataFrame:
    """Input records that appear in the output at more than one offset."""
    dup = (
        _shifted(fr, fr.value_index)
        .where((F.col("key") >= F.col("shift")) & (F.size("offsets") > 1))
        .select("key", "value", "offsets", "shift")
    )
    sent = (
        fr.sends.join(_copies(fr).select("index"), "index")
        .join(dup.select("key", "value"), ["key", "value"])
        .groupBy("key", "value")
        .agg(
            F.slice(
                F.sort_array(F.collect_list(F.struct("offset", op_ref().alias("op")))), 1, SHOWN
            ).alias("copies")
        )
    )
    return dup.join(sent, ["key", "value"], "left").select(
        "key",
        (F.col("key") - F.col("shift")).alias("input_key"),
        "value",
        "offsets",
        F.coalesce("copies", F.array()).alias("copies"),
    )


def _explain_lost(c: Case) -> str:
    return (
        f"Input record {c['value']} of key {c['key']} (offset {c['offset']}, sent by "
        f"{op_name(c.get('writer'))}) was consumed by {op_name(c.get('op'))}, which polled key "
        f"{c['key']} up to offset {c['consumed_upto']} and committed, yet no OK poll of "
        f"output key {c['output_key']} ever returned {c['value']}: the copy lost it."
    )


def _explain_duplicate(c: Case) -> str:
    by = ", ".join(f"{op_name(x['op'])} at offset {x['offset']}" for x in c.get("copies") or [])
    return (
        f"Input record {c['value']} of key {c['input_key']} appears in output key {c['key']} "
        f"at {len(c['offsets'])} offsets ({', '.join(map(str, c['offsets']))})"
        + (f", copied by {by}" if by else "")
        + ": copied more than once."
    )


EOS_LOST = Kind(
    "eos-lost",
    PerWorkload("output_shift", eos_lost),
    _explain_lost,
    "An exactly-once copy lost a record: a copy transaction consumed it and committed, "
    "yet it never appeared in the output. Consume-transform-produce transactions must "
    "carry every record they consume into their output.",
)
EOS_DUPLICATE = Kind(
    "eos-duplicate",
    PerWorkload("output_shift", eos_duplicate),
    _explain_duplicate,
    "An exactly-once copy wrote one input record into its output more than once: "
    "consuming a record and producing its copy did not happen exactly once together.",
)
