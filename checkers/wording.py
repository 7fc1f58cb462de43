"""How every kind's sentence names ops, offsets and lists of values, so the
sentences of all kinds (:attr:`checkers.kind.Kind.sentence`) read alike."""

from __future__ import annotations

from typing import Any

from checkers.kind import Case


def op_name(op: Case | None) -> str:
    """``op 12 (process 3)``, with ``failed`` or ``indeterminate`` before it
    for ops that did not complete OK."""
    if not op:
        return "an unknown op"
    kind = {"info": "indeterminate ", "fail": "failed "}.get(op.get("type", ""), "")
    return f"{kind}op {op['index']} (process {op['process']})"


def at_offset(offset: Any) -> str:
    return f"at offset {offset}" if offset is not None else "at an unknown offset"


def listed(vs: list[Any], total: int | None = None) -> str:
    """``vs`` comma-separated, and how many of ``total`` were left out."""
    shown = ", ".join(str(v) for v in vs)
    more = (total or len(vs)) - len(vs)
    return shown + (f" and {more} more" if more > 0 else "")
