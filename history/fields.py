"""Checks on an op's core fields and on the extra fields the checker
parses, shared by every reader.

Values (micro-ops, key lists) are checked while flattening, in
:mod:`history.flatten`, so each element is visited once.
"""

from __future__ import annotations

import re
from typing import Any

from history.op import CORE_FIELDS, NEMESIS, OP_TYPES

INT_TEXT = re.compile(r"-?[0-9]+")


def describe(x: Any) -> str:
    """A short rendering of a bad value for an error message."""
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


def check_core(d: dict[str, Any], default_index: int | None = None) -> tuple[Any, ...]:
    """Returns ``(index, time, type, process, f, value, extra)`` of a decoded op
    map or raises ``ValueError`` naming the bad field. ``default_index`` fills a
    missing index (Jepsen EDN histories may omit it)."""
    try:  # the common, well-formed case in one test
        index, time, op_type, process, f = d["index"], d["time"], d["type"], d["process"], d["f"]
        if (
            type(index) is int
            and type(time) is int
            and op_type in OP_TYPES
            and (type(process) is int or process == NEMESIS)
            and type(f) is str
            and f
        ):
            if len(d) == 6 and "value" in d:
                return index, time, op_type, process, f, d["value"], {}
            extra = {k: v for k, v in d.items() if k not in CORE_FIELDS}
            return index, time, op_type, process, f, d.get("value"), extra
    except (KeyError, TypeError):
        pass
    return _check_slowly(d, default_index)


def _check_slowly(d: dict[str, Any], default_index: int | None) -> tuple[Any, ...]:
    """Field by field, to name the first bad one."""
    index = d.get("index", default_index)
    if index is None:
        raise ValueError("missing field 'index'")
    if type(index) is not int:
        raise ValueError(f"field 'index' must be an integer, got {describe(index)}")
    for name in ("time", "type", "process", "f"):
        if name not in d:
            raise ValueError(f"missing field '{name}'")
    time = d["time"]
    if type(time) is not int:
        raise ValueError(f"field 'time' must be an integer, got {describe(time)}")
    op_type = d["type"]
    if op_type not in OP_TYPES:
        raise ValueError(f"unknown op type {describe(op_type)} (expected invoke, ok, fail or info)")
    process = d["process"]
    if type(process) is str:
        if not process or INT_TEXT.fullmatch(process):
            raise ValueError(
                f"field 'process' must be an integer or a name such as 'nemesis', "
                f"got {describe(process)}"
            )
    elif type(process) is not int:
        raise ValueError(f"field 'process' must be an integer or a name, got {describe(process)}")
    f = d["f"]
    if type(f) is not str or not f:
        raise ValueError(f"field 'f' must be a non-empty string, got {describe(f)}")
    extra = {k: v for k, v in d.items() if k not in CORE_FIELDS}
    return index, time, op_type, process, f, d.get("value"), extra


RESET_FIELDS = ("key", "from", "to")


def _check_resets(resets: Any) -> None:
    """``offset_resets`` must be ``[{key, from, to}]`` of integers (the
    checker parses it from ``extra``)."""
    if type(resets) is not list:
        raise ValueError(f"offset_resets must be a list, got {describe(resets)}")
    for r in resets:
        if type(r) is not dict or any(type(r.get(f)) is not int for f in RESET_FIELDS):
            raise ValueError(
                f"offset_resets entry must be a map of integer key, from and to, got {describe(r)}"
            )


def _check_ends(ends: Any) -> None:
    """``ends`` must be ``{key: [end, high watermark]}`` of integers (the
    checker parses it from ``extra``)."""
    if type(ends) is not dict:
        raise ValueError(f"ends must be a map, got {describe(ends)}")
    for k, pair in ends.items():
        if type(k) is not int and not (type(k) is str and INT_TEXT.fullmatch(k)):
            raise ValueError(f"ends key must be an integer, got {describe(k)}")
        if type(pair) is not list or len(pair) != 2 or any(type(x) is not int for x in pair):
            raise ValueError(
                f"ends of key {k} must be [end, high watermark] of integers, got {describe(pair)}"
            )


def check_extra(extra: dict[str, Any]) -> None:
    """The extra fields the checker parses (``offset_resets``, ``ends``,
    ``refused``, ``txn_timeout_ms``) have their shapes; raises ``ValueError``
    naming the field. Other extra fields are kept as they are."""
    if "offset_resets" in extra:
        _check_resets(extra["offset_resets"])
    if "ends" in extra:
        _check_ends(extra["ends"])
    if "refused" in extra:
        refused = extra["refused"]
        if type(refused) is not list or any(type(i) is not int or i < 0 for i in refused):
            raise ValueError(f"refused must be a list of micro-op indexes, got {describe(refused)}")
    if "txn_timeout_ms" in extra and type(extra["txn_timeout_ms"]) is not int:
        raise ValueError(
            f"txn_timeout_ms must be an integer, got {describe(extra['txn_timeout_ms'])}"
        )
