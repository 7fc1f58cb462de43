"""One sentence per instance of the workload checks' kinds (see
``checkers.workloads.eos`` and ``checkers.workloads.group`` for the rules)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Case = dict[str, Any]


def _op(op: Case | None) -> str:
    from checkers.explain import op_name

    return op_name(op)


def _ms(ns: Any) -> str:
    return f"{ns / 1e6:.1f} ms" if isinstance(ns, (int, float)) else "an unknown time"


def eos_lost(c: Case) -> str:
    return (
        f"Input record {c['value']} of key {c['key']} (offset {c['offset']}, sent by "
        f"{_op(c.get('writer'))}) was consumed by {_op(c.get('op'))}, which polled key "
        f"{c['key']} up to offset {c['consumed_upto']} and committed, yet no OK poll of "
        f"output key {c['output_key']} ever returned {c['value']}: the copy lost it."
    )


def eos_duplicate(c: Case) -> str:
    by = ", ".join(f"{_op(x['op'])} at offset {x['offset']}" for x in c.get("copies") or [])
    return (
        f"Input record {c['value']} of key {c['input_key']} appears in output key {c['key']} "
        f"at {len(c['offsets'])} offsets ({', '.join(map(str, c['offsets']))})"
        + (f", copied by {by}" if by else "")
        + ": copied more than once."
    )


def committed_offset_regression(c: Case) -> str:
    return (
        f"{_op(c['prev_op'])} committed key {c['key']} at offset {c['prev_offset']} and "
        f"completed before {_op(c['op'])} began, which then committed key {c['key']} at "
        f"offset {c['offset']}: the group's committed offset went backwards."
    )


def _owner(o: Case) -> str:
    end = (
        f"until {_op(o['revoked_by'])} revoked it"
        if o.get("revoked_by")
        else "with no revocation logged before its last op"
    )
    return f"process {o['process']} (assigned in {_op(o['assigned_by'])}, {end})"


def split_ownership(c: Case) -> str:
    return (
        f"Key {c['key']} had two owners at once: {_owner(c['first'])} and "
        f"{_owner(c['second'])} both held it from {_ms(c['from'])} to {_ms(c['until'])}. "
        "A process owns a key from the completion of the op whose rebalance log assigned "
        "it until the invocation of the op that logged its revocation, of its next assign, "
        "or of its last op."
    )


def resume_skip(c: Case) -> str:
    by = f" ({_op(c['commit_op'])})" if c.get("commit_op") else " (none: the beginning)"
    return (
        f"{_op(c['op'])} first polled key {c['key']} after its assignment in op "
        f"{c['assigned_index']} from offset {c['offset']}, but the group's committed offset "
        f"was at most {c['committed']}{by}: it skipped {c['skipped_count']} record(s) at "
        f"offsets {', '.join(map(str, c['skipped']))} that no member acknowledged reading."
    )


EXPLAINERS: dict[str, Callable[[Case], str]] = {
    "eos-lost": eos_lost,
    "eos-duplicate": eos_duplicate,
    "committed-offset-regression": committed_offset_regression,
    "split-ownership": split_ownership,
    "resume-skip": resume_skip,
}
