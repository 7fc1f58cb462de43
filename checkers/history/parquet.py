"""jepka's ``history.parquet``: the flat table as written, checked on reading
(schema, op-start rows, op types, history order) so a foreign or damaged file
fails with the row at fault instead of confusing the analyses."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from checkers.history.errors import HistoryError
from checkers.history.op import OP_TYPES
from checkers.history.pairing import attach_pairs
from checkers.history.schema import FLAT_SCHEMA

ROW_GROUP = 1 << 20


def write_parquet(table: pa.Table, path: str) -> None:
    pq.write_table(table.cast(FLAT_SCHEMA), path, row_group_size=ROW_GROUP, compression="zstd")


def read_parquet_flat(path: str) -> pa.Table:
    """Reads and checks a flat table; errors name the 1-based row."""
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as e:
        raise HistoryError(path, None, f"cannot read as Parquet: {e}") from None
    missing = [n for n in FLAT_SCHEMA.names if n not in table.column_names]
    if missing:
        raise HistoryError(path, None, f"not a jepka history table: missing columns {missing}")
    table = table.select(FLAT_SCHEMA.names)
    for field in FLAT_SCHEMA:
        if table.schema.field(field.name).type != field.type:
            got = table.schema.field(field.name).type
            raise HistoryError(
                path, None, f"column '{field.name}' has type {got}, not {field.type}"
            )
    _check_rows(path, table)
    return attach_pairs(table, path)


def _first(path: str, bad: np.ndarray, message: str) -> None:
    hits = np.flatnonzero(bad)
    if len(hits):
        raise HistoryError(path, int(hits[0]) + 1, message)


def _check_rows(path: str, table: pa.Table) -> None:
    for name in ("index", "time", "type", "process", "f", "row"):
        nulls = pc.is_null(table[name]).to_numpy(zero_copy_only=False)
        _first(path, nulls, f"column '{name}' is null")
    row = table["row"].to_numpy()
    expected = np.zeros_like(row)
    if len(row):
        expected[1:] = row[:-1] + 1
    _first(path, (row != 0) & (row != expected), "row numbers within an op must count up from 0")
    known = pc.is_in(table["type"], value_set=pa.array(sorted(OP_TYPES))).to_numpy(
        zero_copy_only=False
    )
    _first(path, ~known, "unknown op type (expected invoke, ok, fail or info)")
    # every row of an op repeats the op's index
    index = table["index"].to_numpy()
    same_op = np.zeros(len(row), dtype=bool)
    same_op[1:] = index[1:] == index[:-1]
    _first(path, (row != 0) != same_op, "rows of one op must share its index")
