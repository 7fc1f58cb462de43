"""Plain-language meaning of each anomaly kind, and how an instance names ops.

The checker decides; this module only explains. A reader who has never seen
Jepsen should understand from one paragraph what went wrong and why it
matters for a Kafka user. Kinds the checker adds later still render: they
fall back to a generic sentence, and their instances' own ``explanation``
carries the detail.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

EXPLANATIONS: dict[str, str] = {
    "lost-write": (
        "A message the broker acknowledged was never read, although consumers read later "
        "messages of the same partition. Data was lost after it was confirmed as written."
    ),
    "duplicate": (
        "The same message appears at more than one offset of a partition: a send was stored "
        "twice (e.g. a retry without idempotence)."
    ),
    "inconsistent-offsets": (
        "Two different messages were observed at the same offset of the same partition: "
        "clients disagree about what the log contains."
    ),
    "unseen": (
        "Messages were acknowledged but no consumer ever read them by the end of the test. "
        "They may be lost, or consumers may be stuck behind them."
    ),
    "G1a": (
        "Aborted read: a consumer read a message whose send definitely failed or whose "
        "transaction aborted. read_committed consumers must never see such data."
    ),
    "precommitted-read": (
        "A transaction read a message before that message's transaction committed. Kafka's "
        "read_committed isolation forbids seeing uncommitted records."
    ),
    "poll-skip": (
        "A consumer's next poll jumped over messages that exist in the log, without any "
        "rebalance or re-assignment in between: messages were silently skipped."
    ),
    "nonmonotonic-poll": (
        "A consumer's next poll went backwards (or repeated) in the log without a rebalance "
        "or re-assignment: it re-read messages it had already consumed."
    ),
    "int-poll-skip": (
        "Within one poll, consecutive messages of a partition skip over messages that exist "
        "in the log between them."
    ),
    "int-nonmonotonic-poll": (
        "Within one poll, messages of a partition arrive out of log order or repeated."
    ),
    "nonmonotonic-send": (
        "One producer's later send landed at or before its earlier send in the partition "
        "log: the producer's order was not preserved."
    ),
    "int-send-skip": (
        "Two sends inside one transaction did not land next to each other: another "
        "producer's message is between them. Kafka does not isolate writes, so this is "
        "normally allowed."
    ),
    "int-nonmonotonic-send": (
        "Two sends inside one transaction landed in the opposite order in the partition log."
    ),
    "G0": (
        "Write cycle: transactions' writes are ordered one way in one partition and the other "
        "way in another. Kafka's transactional model allows this."
    ),
    "G0-process": ("Write cycle that also uses the order of operations within one client process."),
    "G0-realtime": (
        "Write cycle that also uses real-time order: an operation that finished before "
        "another began appears to have happened after it."
    ),
    "G1c": (
        "Circular information flow: transaction A read data written by B, and B (directly or "
        "through others) read or was ordered after A. No serial order explains what happened."
    ),
    "G1c-process": (
        "Circular information flow that also uses the order of operations within one client "
        "process."
    ),
    "G1c-realtime": (
        "Circular information flow that also uses real-time order: some operation observed "
        "effects from the future relative to when it ran."
    ),
    "cycle-search-timeout": (
        "A dependency cycle exists among some operations, but the search ran out of time "
        "before naming one: the run could not be fully judged."
    ),
}

GENERIC = "An anomaly reported by the checker; see each instance's explanation."

# Fields that name ops by bare history index (op references are otherwise
# maps with an ``index`` and a ``process``, found wherever they nest).
OP_FIELDS = frozenset(
    {
        "op",
        "ops",
        "writer",
        "reader",
        "readers",
        "cycle",
        "max_read",
        "prev_op",
        "op_index",
        "writer_index",
        "reader_index",
    }
)


def explain(kind: str) -> str:
    """The plain-language paragraph for ``kind``."""
    if kind in EXPLANATIONS:
        return EXPLANATIONS[kind]
    for suffix in ("-cycle-exists",):
        if kind.endswith(suffix):
            return (
                "A dependency cycle provably exists among these operations, but no specific "
                "cycle was extracted in time."
            )
    return GENERIC


def is_realtime(kind: str) -> bool:
    """Whether ``kind`` is a cycle that relies on real-time order (a linearizability breach)."""
    return kind.endswith("-realtime")


def is_cycle(kind: str) -> bool:
    return kind.split("-", 1)[0] in {"G0", "G1c", "G2", "G-single"}


def instance_ops(instance: Mapping[str, Any]) -> list[int]:
    """History indices an instance names, in first-mention order, without repeats."""
    seen: dict[int, None] = {}
    _collect(instance, False, seen)
    return list(seen)


def _collect(v: Any, bare_ints: bool, seen: dict[int, None]) -> None:
    """Op references in ``v``: maps with an integer ``index`` and a ``process``, and,
    when ``bare_ints``, plain integers (under a field in :data:`OP_FIELDS`)."""
    if isinstance(v, bool):
        return
    if isinstance(v, int):
        if bare_ints:
            seen.setdefault(v, None)
    elif isinstance(v, Mapping):
        idx = v.get("index")
        if isinstance(idx, int) and not isinstance(idx, bool) and "process" in v:
            seen.setdefault(idx, None)
        for k, x in v.items():
            if k != "index":
                _collect(x, k in OP_FIELDS, seen)
    elif isinstance(v, list | tuple):
        for x in v:
            _collect(x, bare_ints, seen)
