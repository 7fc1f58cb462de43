"""Anomalies of the version order itself: one offset, two values; one value,
two offsets."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from checkers.kind import Case, Kind, PerKey
from checkers.queue.key_log import INFO, MOPS, TYPES, KeyLog, group_bounds
from checkers.wording import listed, op_name

SHOWN_OPS = 8


def _observers(kl: KeyLog, rows: np.ndarray) -> list[Case]:
    """Who observed ``rows`` (any op, any micro-op with a known offset): the
    first few by offset, value, micro-op name and op, for explanations."""
    rows = rows[kl.has_offset[rows]]
    by_name = kl.mop[rows] != MOPS.index("poll")  # "poll" sorts before "send"
    order = np.lexsort((kl.index[rows], by_name, kl.value[rows], kl.offset[rows]))
    shown = []
    for r in rows[order][:SHOWN_OPS]:
        ref = kl.op_ref(int(r))
        shown.append(
            {
                "offset": int(kl.offset[r]),
                "value": int(kl.value[r]),
                "mop": MOPS[kl.mop[r]],
                "index": ref["index"],
                "process": ref["process"],
                "time": ref["time"],
                "type": TYPES[kl.type[r]],
                "f": ref["f"],
            }
        )
    return shown


def _evident(kl: KeyLog, rows: np.ndarray, told_apart_by: np.ndarray) -> dict[str, int]:
    """When the anomaly among observed ``rows`` became visible, as the field
    ``evident`` (ns): once two distinct values of ``told_apart_by`` had been
    observed, by a poll or an acknowledged send. An info send's row counts
    only once a read proved it, which may be on another key, so rows of info
    sends are left out, and without two values left the field is too."""
    known = ~(kl.is_send[rows] & (kl.type[rows] == INFO))
    rows, told_apart_by = rows[known], told_apart_by[known]
    firsts = sorted(int(kl.time[rows][told_apart_by == v].min()) for v in np.unique(told_apart_by))
    return {"evident": firsts[1]} if len(firsts) > 1 else {}


def inconsistent_offsets(kl: KeyLog) -> Iterator[Case]:
    """Two different values observed at the same offset of a key.

    Observed means polled by any op (polls must always return committed data) or
    sent by an op that must have committed. Kafka assigns each offset once, so
    this means replicas diverged or a write was acknowledged at a wrong offset.
    """
    starts, ends = group_bounds(kl.v_offset)
    counts = ends - starts
    for s in starts[counts > 1]:
        offset = int(kl.v_offset[s])
        seen = np.flatnonzero(kl.observed & (kl.offset == offset))
        yield {
            "key": kl.key,
            "offset": offset,
            "idx": int(kl.v_idx[s]),
            "values": sorted(int(v) for v in kl.v_value[kl.v_offset == offset]),
            **_evident(kl, seen, kl.value[seen]),
            "ops": _observers(kl, np.flatnonzero(kl.offset == offset)),
        }


def duplicate(kl: KeyLog) -> Iterator[Case]:
    """One value appears at more than one offset of a key: the message was
    written twice (e.g. a producer retry that idempotence should have removed)."""
    for p in np.flatnonzero(kl.value_count > 1):
        value = int(kl.values[p])
        offsets = kl.value_offsets(value)
        seen = np.flatnonzero(kl.observed & (kl.value == value))
        yield {
            "key": kl.key,
            "value": value,
            "offsets": offsets,
            "count": len(offsets),
            **_evident(kl, seen, kl.offset[seen]),
            "ops": _observers(kl, np.flatnonzero(kl.value == value)),
        }


def _explain_inconsistent_offsets(c: Case) -> str:
    seen = "; ".join(
        f"{op_name(o)} {'sent' if o['mop'] == 'send' else 'polled'} {o['value']}"
        for o in c.get("ops") or []
    )
    return (
        f"Offset {c['offset']} of key {c['key']} holds different values "
        f"({listed(c['values'])}): {seen}."
    )


def _explain_duplicate(c: Case) -> str:
    who = ", ".join(f"{op_name(o)} at offset {o['offset']}" for o in (c.get("ops") or [])[:4])
    return (
        f"Value {c['value']} appears {c['count']} times in key {c['key']}, at offsets "
        f"{listed(c['offsets'])} (seen by {who})."
    )


INCONSISTENT_OFFSETS = Kind(
    "inconsistent-offsets",
    PerKey(inconsistent_offsets),
    _explain_inconsistent_offsets,
    "Two different messages were observed at the same offset of the same partition: "
    "clients disagree about what the log contains.",
)
DUPLICATE = Kind(
    "duplicate",
    PerKey(duplicate),
    _explain_duplicate,
    "The same message appears at more than one offset of a partition: a send was stored "
    "twice (e.g. a retry without idempotence).",
)
