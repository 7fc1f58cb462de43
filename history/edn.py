"""Jepsen's ``history.edn``: one op map per line, keywords for names.

Mapping to jepka's model: keywords become strings (``:send`` → ``"send"``,
``:nemesis`` → ``"nemesis"``); op-level field names go from kebab-case to
snake_case (``:rebalance-log`` → ``rebalance_log``) and back; sets become
lists; a missing ``:index`` is the op's position; ops printed as Jepsen
records (``#jepsen.history.Op{...}``) read as maps. Writing turns strings that
read as identifiers back into keywords, so a jepka history survives
JSONL → EDN → JSONL unchanged; op-level names that contain ``-`` in jepka
are written as EDN string keys to stay distinct.
"""

from __future__ import annotations

import decimal
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import edn_format
import pyarrow as pa
from edn_format import Keyword, Symbol

from history.errors import HistoryError
from history.fields import check_core
from history.flatten import FlatBuilder
from history.op import Op

IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_?!*+<>=.-]*")

# Jepsen 0.3+ prints each op as a record: #jepsen.history.Op{:index 0, ...}
edn_format.add_tag("jepsen.history.Op", lambda fields: fields)


def _from_edn(x: Any) -> Any:
    """An EDN value as JSON-like Python data."""
    if x is None or type(x) in (bool, int, str, float):
        return x
    if isinstance(x, Keyword | Symbol):
        return x.name
    if isinstance(x, Mapping):
        return {_from_edn(k): _from_edn(v) for k, v in x.items()}
    if isinstance(x, AbstractSet):
        items = [_from_edn(v) for v in x]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(x, Sequence):
        return [_from_edn(v) for v in x]
    if isinstance(x, decimal.Decimal):
        return float(x)
    return str(x)  # chars, instants, UUIDs, tagged values


def _to_edn(x: Any) -> Any:
    """JSON-like Python data as EDN values (identifier strings → keywords)."""
    if type(x) is str:
        return Keyword(x) if IDENTIFIER.fullmatch(x) else x
    if isinstance(x, dict):
        return {_to_edn(k): _to_edn(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_to_edn(v) for v in x]
    return x


# EDN's tokens: strings, set openers, brackets, atoms (keywords, numbers,
# symbols, tags), and any other character alone (never valid: the slow path
# then names the error).
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|#\{|[\[\](){}]|[^\s,\[\](){}"]+|[^\s,]')
_INT = re.compile(r"[-+]?\d+N?")
_FLOAT = re.compile(r"[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?M?")
_CONSTANTS = {"nil": None, "true": True, "false": False}
_CLOSE = {"[": "]", "(": ")"}


class _Unusual(Exception):
    """A line the fast reader leaves to edn_format (tags, symbols, chars,
    comments, malformed input)."""


def _fast_op(line: str) -> dict[str, Any]:
    """One op line as ``_op_map(edn_format.loads(line))`` gives it, without
    building EDN objects: keywords, numbers, strings, nil/true/false,
    vectors, lists, sets and maps. Raises ``_Unusual`` for anything else."""
    tokens = _TOKENS.findall(line)
    i = 1 if tokens and tokens[0] == "#jepsen.history.Op" else 0
    try:
        if tokens[i] != "{":
            raise _Unusual
        i += 1
        out: dict[str, Any] = {}
        while tokens[i] != "}":
            key = tokens[i]
            if key[0] == ":" and len(key) > 1 and "/" not in key:
                name = key[1:].replace("-", "_")
            elif key[0] == '"':
                name = _string(key)
            else:
                raise _Unusual
            out[name], i = _value(tokens, i + 1)
        if i + 1 != len(tokens):
            raise _Unusual
        return out
    except IndexError:
        raise _Unusual from None


def _value(tokens: list[str], i: int) -> tuple[Any, int]:
    t = tokens[i]
    c = t[0]
    if c == ":":
        if len(t) == 1 or "/" in t:
            raise _Unusual
        return t[1:], i + 1
    if c in _CLOSE:
        close, items = _CLOSE[c], []
        i += 1
        while tokens[i] != close:
            v, i = _value(tokens, i)
            items.append(v)
        return items, i + 1
    if c == "{":
        out, i = {}, i + 1
        while tokens[i] != "}":
            k, i = _value(tokens, i)
            if isinstance(k, list | dict):
                raise _Unusual
            out[k], i = _value(tokens, i)
        return out, i + 1
    if t == "#{":
        members, i = [], i + 1
        while tokens[i] != "}":
            v, i = _value(tokens, i)
            members.append(v)
        try:
            return sorted(members), i + 1
        except TypeError:  # edn_format keeps a mixed set in its own order
            raise _Unusual from None
    if c == '"':
        return _string(t), i + 1
    if t in _CONSTANTS:
        return _CONSTANTS[t], i + 1
    if _INT.fullmatch(t):
        return int(t.rstrip("N")), i + 1
    if _FLOAT.fullmatch(t):
        return float(t.rstrip("M")), i + 1
    raise _Unusual


def _string(token: str) -> str:
    try:
        return str(json.loads(token))
    except ValueError:
        raise _Unusual from None


def _op_map(d: Any) -> dict[str, Any]:
    if not isinstance(d, Mapping):
        raise ValueError("expected an op map {:index ..., :type ..., ...}")
    out = {}
    for k, v in d.items():
        if isinstance(k, Keyword):
            name = k.name.replace("-", "_")
        elif type(k) is str:
            name = k
        else:
            raise ValueError(f"op field names must be keywords, got {k!r}")
        out[name] = _from_edn(v)
    return out


def read_edn_unpaired(path: str) -> pa.Table:
    """The flat table of a Jepsen EDN history before pairing (with ``_line``)."""
    builder = FlatBuilder()
    try:
        f = open(path, encoding="utf-8")  # noqa: SIM115 (closed below; errors name the line)
    except OSError as e:
        raise HistoryError(path, None, f"cannot read: {e.strerror}") from None
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                op = _fast_op(line)
            except _Unusual:
                op = _slow_op(path, n, line)
                if op is None:
                    continue  # a comment
            try:
                builder.add(*check_core(op, default_index=len(builder)), n)
            except ValueError as e:
                raise HistoryError(path, n, str(e)) from None
    try:
        return builder.build()
    except ValueError as e:
        raise HistoryError(path, None, str(e)) from None


def _slow_op(path: str, n: int, line: str) -> dict[str, Any] | None:
    """One op line through edn_format, for what ``_fast_op`` leaves; None
    for a line holding only a comment."""
    try:
        forms = edn_format.loads_all(line)
    except (ValueError, TypeError, AttributeError, NotImplementedError) as e:
        raise HistoryError(path, n, f"malformed EDN: {e}") from None
    if not forms:
        return None
    if len(forms) != 1:
        raise HistoryError(path, n, "expected one op map per line")
    try:
        return _op_map(forms[0])
    except ValueError as e:
        raise HistoryError(path, n, str(e)) from None


def op_to_edn(op: Op) -> str:
    """One op as a Jepsen EDN map."""
    d: dict[Any, Any] = {
        Keyword("index"): op.index,
        Keyword("time"): op.time,
        Keyword("type"): Keyword(op.type),
        Keyword("process"): _to_edn(op.process),
        Keyword("f"): _to_edn(op.f),
        Keyword("value"): _to_edn(op.value),
    }
    for k, v in op.extra.items():
        key = Keyword(k.replace("_", "-")) if "-" not in k and IDENTIFIER.fullmatch(k) else k
        d[key] = _to_edn(v)
    return edn_format.dumps(d)


def write_edn(ops: Iterable[Op], path: str) -> int:
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for op in ops:
            f.write(op_to_edn(op))
            f.write("\n")
            n += 1
    return n
