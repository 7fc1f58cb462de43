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
from checkers.history.pairing import attach_pairs, compute_pairs
from checkers.history.schema import FLAT_SCHEMA

ROW_GROUP = 1 << 20


def write_parquet(table: pa.Table, path: str) -> None:
    pq.write_table(table.cast(FLAT_SCHEMA), path, row_group_size=ROW_GROUP, compression="zstd")


CHECKED = ("index", "time", "type", "process", "f", "row", "pair_index", "pair_time")


def _read(path: str, columns: list[str] | None = None) -> pa.Table:
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException) as e:
        raise HistoryError(path, None, f"cannot read as Parquet: {e}") from None
    missing = [n for n in FLAT_SCHEMA.names if n not in schema.names]
    if missing:
        raise HistoryError(path, None, f"not a jepka history table: missing columns {missing}")
    for field in FLAT_SCHEMA:
        got = schema.field(field.name).type
        if got != field.type:
            raise HistoryError(
                path, None, f"column '{field.name}' has type {got}, not {field.type}"
            )
    try:
        return pq.read_table(path, columns=columns or FLAT_SCHEMA.names)
    except (OSError, pa.ArrowException) as e:
        raise HistoryError(path, None, f"cannot read as Parquet: {e}") from None


def read_parquet_flat(path: str) -> pa.Table:
    """Reads and checks a flat table; errors name the 1-based row."""
    table = _read(path)
    _check_rows(path, table)
    return attach_pairs(table, path)


def check_parquet(path: str) -> int:
    """Checks a flat table on disk reading only the columns the checks need
    (so a history too big for memory can be checked, then scanned by Spark);
    returns the number of ops."""
    table = _read(path, list(CHECKED))
    _check_rows(path, table)
    pair_index, pair_time = compute_pairs(table, path)
    for name, expected in (("pair_index", pair_index), ("pair_time", pair_time)):
        stored = table[name].combine_chunks()
        same = pc.fill_null(pc.equal(stored, expected), False)
        both_null = pc.and_(pc.is_null(stored), pc.is_null(expected))
        wrong = pc.invert(pc.or_(same, both_null)).to_numpy(zero_copy_only=False)
        _first(path, wrong, f"column '{name}' disagrees with the history's pairs")
    return int((table["row"].to_numpy() == 0).sum())


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
