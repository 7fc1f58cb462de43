"""Plain-language meaning of each anomaly kind, and how an instance names ops.

The checker decides; this module only explains. A reader who has never seen
Jepsen should understand from one paragraph what went wrong and why it
matters for a Kafka user: that paragraph is the kind's ``meaning`` in the
checker's registry (:mod:`checkers.kinds`), beside its finder and sentence.
Kinds the registry does not know (results of another jepka) still render:
they fall back to a generic sentence, and their instances' own
``explanation`` carries the detail.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checkers.kind import CycleSearch
from checkers.kinds import KINDS

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
    if kind in KINDS:
        return KINDS[kind].meaning
    return GENERIC


def is_realtime(kind: str) -> bool:
    """Whether ``kind`` is a cycle that relies on real-time order (a linearizability breach)."""
    return kind.endswith("-realtime")


def is_cycle(kind: str) -> bool:
    """Whether instances of ``kind`` are cycles, drawn from their steps."""
    return kind in KINDS and KINDS[kind].finder is CycleSearch.CYCLE


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
