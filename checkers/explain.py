"""One plain sentence per anomaly instance, from the instance's data alone.

Kept apart from the finders so reports can re-render stored results, and so
every kind's wording sits in one place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from checkers.workloads.explain import EXPLAINERS as WORKLOAD_EXPLAINERS

Case = dict[str, Any]


def op_name(op: Case | None) -> str:
    if not op:
        return "an unknown op"
    kind = {"info": "indeterminate ", "fail": "failed "}.get(op.get("type", ""), "")
    return f"{kind}op {op['index']} (process {op['process']})"


def _at(offset: Any) -> str:
    return f"at offset {offset}" if offset is not None else "at an unknown offset"


def _values(vs: list[Any], total: int | None = None) -> str:
    shown = ", ".join(str(v) for v in vs)
    more = (total or len(vs)) - len(vs)
    return shown + (f" and {more} more" if more > 0 else "")


def inconsistent_offsets(c: Case) -> str:
    seen = "; ".join(
        f"{op_name(o)} {'sent' if o['mop'] == 'send' else 'polled'} {o['value']}"
        for o in c.get("ops") or []
    )
    return (
        f"Offset {c['offset']} of key {c['key']} holds different values "
        f"({_values(c['values'])}): {seen}."
    )


def duplicate(c: Case) -> str:
    who = ", ".join(f"{op_name(o)} at offset {o['offset']}" for o in (c.get("ops") or [])[:4])
    return (
        f"Value {c['value']} appears {c['count']} times in key {c['key']}, at offsets "
        f"{_values(c['offsets'])} (seen by {who})."
    )


def lost_write(c: Case) -> str:
    return (
        f"{op_name(c['writer'])} sent {c['value']} to key {c['key']} {_at(c['offset'])}; "
        f"{op_name(c.get('max_read'))} polled key {c['key']} up to offset {c.get('max_offset')} "
        f"but no OK poll ever saw {c['value']}."
    )


def unseen(c: Case) -> str:
    first = (c.get("messages") or [{}])[0]
    example = (
        f", e.g. {first['value']} sent by {op_name(first.get('writer'))} {_at(first['offset'])}"
        if first
        else ""
    )
    return (
        f"{c['count']} acknowledged message(s) on key {c['key']} were never returned by any "
        f"OK poll{example}."
    )


def g1a(c: Case) -> str:
    return (
        f"{op_name(c['reader'])} polled {c['value']} from key {c['key']} {_at(c['offset'])}, "
        f"which {op_name(c['writer'])} sent: an aborted write."
    )


def precommitted_read(c: Case) -> str:
    return (
        f"{op_name(c['op'])} sent {c['value']} to key {c['key']} and polled it back "
        f"{_at(c['offset'])} in the same transaction, before it committed."
    )


def _internal(what: str, c: Case) -> str:
    verb = "sent" if what == "send" else "polled"
    head = (
        f"{op_name(c['op'])} {verb} {c['prev_value']} ({_at(c['prev_offset'])}) then "
        f"{c['value']} ({_at(c['offset'])}) on key {c['key']}"
    )
    if c["delta"] > 1:
        return (
            f"{head}, skipping {c['skipped_count']} record(s) in between "
            f"({_values(c.get('skipped') or [], c['skipped_count'])})."
        )
    return f"{head}, going backwards in the log.{_reset(c)}"


def _reset(c: Case) -> str:
    """The sentence naming the offset reset the op's consumer logged, if any."""
    r = c.get("reset")
    if not r:
        return ""
    return (
        f" Its consumer logged an offset reset of key {c['key']} from {r['from']} to "
        f"{r['to']} (auto.offset.reset after an out-of-range fetch)."
    )


def _external(c: Case) -> str:
    via = " (consumed via subscribe)" if c.get("via") == "subscribe" else ""
    if c.get("mode") == "rewind":
        ref = (
            f"after {op_name(c['prev_op'])} failed having polled key {c['key']} from "
            f"offset {c['prev_first_offset']}, it should have rewound there"
        )
    else:
        ref = f"its previous poll, {op_name(c['prev_op'])}, stopped at {c['prev_value']} " + _at(
            c["prev_offset"]
        )
    head = f"On key {c['key']}{via}, {ref}; {op_name(c['op'])} then started at {c['value']} " + (
        _at(c["offset"])
    )
    if c["delta"] > 1:
        return (
            f"{head}, skipping {c['skipped_count']} record(s) "
            f"({_values(c.get('skipped') or [], c['skipped_count'])}).{_reset(c)}"
        )
    return f"{head}, at or before a record it had already polled.{_reset(c)}"


def nonmonotonic_send(c: Case) -> str:
    return (
        f"{op_name(c['prev_op'])} sent {c['prev_value']} to key {c['key']} "
        f"{_at(c['prev_offset'])}; the same producer's later {op_name(c['op'])} sent "
        f"{c['value']}, which landed {_at(c['offset'])}, no later in the log."
    )


REL_TEXT = {
    "ww": lambda a, b, s: (
        f"{a} sent {s.get('v1')} to key {s.get('key')} {_at(s.get('o1'))} before {b} sent "
        f"{s.get('v2')} ({_at(s.get('o2'))})"
    ),
    "wr": lambda a, b, s: f"{b} polled {s.get('value')} from key {s.get('key')}, which {a} sent",
    "process": lambda a, b, s: f"{a} and {b} ran on process {s.get('process')}, {a} first",
    "realtime": lambda a, b, s: f"{a} completed before {b} began",
}


def cycle(c: Case) -> str:
    names: dict[int, str] = {}
    for st in c["steps"]:
        names.setdefault(st["from"]["index"], f"T{len(names) + 1}")
    let = ", ".join(
        f"{t} = op {idx} (process {next(s['from']['process'] for s in c['steps'] if s['from']['index'] == idx)})"  # noqa: E501
        for idx, t in names.items()
    )
    steps = "; ".join(
        REL_TEXT[st["rel"]](names[st["from"]["index"]], names[st["to"]["index"]], st)
        for st in c["steps"]
    )
    first = names[c["steps"][0]["from"]["index"]]
    return f"Let {let}. {steps}: so {first} precedes itself, a {c['kind']} cycle."


def cycle_search_timeout(c: Case) -> str:
    return (
        f"A {c['spec']} cycle exists in a component of {c['component_size']} ops, but "
        "the cycle search ran out of time before naming one."
    )


EXPLAINERS: dict[str, Callable[[Case], str]] = {
    "inconsistent-offsets": inconsistent_offsets,
    "duplicate": duplicate,
    "lost-write": lost_write,
    "unseen": unseen,
    "G1a": g1a,
    "precommitted-read": precommitted_read,
    "int-poll-skip": lambda c: _internal("poll", c),
    "int-nonmonotonic-poll": lambda c: _internal("poll", c),
    "int-send-skip": lambda c: _internal("send", c),
    "int-nonmonotonic-send": lambda c: _internal("send", c),
    "poll-skip": _external,
    "nonmonotonic-poll": _external,
    "nonmonotonic-send": nonmonotonic_send,
    "cycle-search-timeout": cycle_search_timeout,
    **WORKLOAD_EXPLAINERS,
}


def explain(kind: str, case: Case) -> str:
    if kind in EXPLAINERS:
        return EXPLAINERS[kind](case)
    if "steps" in case:
        return cycle(case)
    return f"{kind}: {case}"
