"""Rebuilding ops from the flat table: the inverse of
:mod:`history.flatten`, so every format converts losslessly."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pyarrow as pa

from history.errors import HistoryError
from history.fields import INT_TEXT
from history.op import Op
from history.schema import ROW_COLUMNS

BATCH = 65_536
OP_COLUMNS = ("index", "time", "type", "process", "f", "keys", "error", "payload", "extra")


def _process(p: str) -> int | str:
    return int(p) if INT_TEXT.fullmatch(p) else p


def _mop(kind: str, rows: list[tuple[Any, ...]]) -> list[Any]:
    """One micro-op from its rows ``(key, offset, value, pos)``."""
    if kind == "send":
        if len(rows) != 1:
            raise ValueError("a send micro-op has exactly one row")
        key, offset, value, pos = rows[0]
        if key is None or value is None:
            raise ValueError("a send row needs key and value")
        if pos is None and offset is not None:
            raise ValueError("a send row in invocation form (null pos) has no offset")
        return ["send", key, value if pos is None else [offset, value]]
    if kind != "poll":
        raise ValueError(f"unknown micro-op kind {kind!r}")
    key, _, _, pos = rows[0]
    if key is None:
        if len(rows) != 1:
            raise ValueError("a poll without records has exactly one row")
        return ["poll"] if pos is None else ["poll", {}]
    result: dict[int, list[list[int]]] = {}
    for key, offset, value, _ in rows:
        if key is None:
            raise ValueError("a poll record row needs a key")
        records = result.setdefault(key, [])
        if value is not None:
            records.append([offset, value])
    return ["poll", result]


def _op(head: dict[str, Any], rows: list[tuple[Any, ...]]) -> Op:
    extra = orjson.loads(head["extra"]) if head["extra"] is not None else {}
    if head["error"] is not None:
        extra["error"] = orjson.loads(head["error"])
    if rows[0][0] is not None:  # micro-ops, grouped by mop_index
        value: Any = []
        start = 0
        for i in range(1, len(rows) + 1):
            if i == len(rows) or rows[i][0] != rows[start][0]:
                value.append(_mop(rows[start][1], [r[2:] for r in rows[start:i]]))
                start = i
    elif len(rows) != 1:
        raise ValueError("an op without micro-ops has exactly one row")
    elif head["keys"] is not None:
        value = head["keys"]
    elif head["payload"] is not None:
        value = orjson.loads(head["payload"])
    else:
        value = None
    return Op(
        head["index"],
        head["time"],
        head["type"],
        _process(head["process"]),
        head["f"],
        value,
        extra,
    )


def unflatten(table: pa.Table, source: str = "<table>") -> Iterator[Op]:
    """The ops of a flat table, in order. A row that cannot be part of a valid
    op raises :class:`HistoryError` naming its 1-based row."""
    head: dict[str, Any] | None = None
    rows: list[tuple[Any, ...]] = []
    first_row = 0
    n = 0
    table = table.select(["row", *OP_COLUMNS, *ROW_COLUMNS])
    for batch in table.to_batches(max_chunksize=BATCH):
        cols = {name: batch.column(name).to_pylist() for name in batch.schema.names}
        row_data = list(zip(*(cols[c] for c in ROW_COLUMNS), strict=True))
        for i, r in enumerate(cols["row"]):
            if r == 0:
                if head is not None:
                    yield _checked(head, rows, source, first_row)
                head = {c: cols[c][i] for c in OP_COLUMNS}
                rows = []
                first_row = n + 1
            rows.append(row_data[i])
            n += 1
    if head is not None:
        yield _checked(head, rows, source, first_row)


def _checked(head: dict[str, Any], rows: list[tuple[Any, ...]], source: str, row: int) -> Op:
    try:
        return _op(head, rows)
    except (ValueError, TypeError) as e:
        raise HistoryError(source, row, str(e)) from None
