"""jepka's ``history.parquet``: the flat table as written, checked on reading
(schema, op-start rows, op types, history order, the extra fields the
checker parses) so a foreign or damaged file fails with the row at fault
instead of confusing the analyses."""

from __future__ import annotations

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from history.errors import HistoryError
from history.fields import check_extra, describe
from history.op import OP_TYPES
from history.pairing import attach_pairs, compute_pairs
from history.schema import FLAT_SCHEMA, LINE

ROW_GROUP = 1 << 20


def write_parquet(table: pa.Table, path: str) -> None:
    pq.write_table(table.cast(FLAT_SCHEMA), path, row_group_size=ROW_GROUP, compression="zstd")


OP_LEVEL = ("index", "time", "type", "process", "f", "pair_index", "pair_time")
# An op's first row: what it checks, and what the checker reads per op.
HEAD_COLUMNS = (*OP_LEVEL, "keys", "rebalance_keys", "extra")
# Columns of a few distinct values (op types, processes, functions).
DICTIONARY_COLUMNS = ("type", "process", "f")
HEAD_SCHEMA = pa.schema([FLAT_SCHEMA.field(n) for n in HEAD_COLUMNS])


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


def check_parquet(path: str) -> pa.Table:
    """Checks a flat table on disk while holding only the row structure and
    one row per op in memory (so a history too big to load can be checked,
    then scanned by Spark); returns each op's first row (:data:`HEAD_COLUMNS`)."""
    structure = _read(path, ["row", "index"])
    _check_structure(path, structure)
    head_rows = np.flatnonzero(structure["row"].to_numpy() == 0)
    del structure
    heads = _op_rows(path)
    lines = pa.array(head_rows + 1)
    heads = heads.append_column("row", pa.array(np.zeros(len(head_rows), np.int32)))
    heads = heads.append_column(LINE, lines)
    _check_ops(path, heads, head_rows)
    pair_index, pair_time = compute_pairs(heads, path)
    for name, expected in (("pair_index", pair_index), ("pair_time", pair_time)):
        stored = heads[name].combine_chunks()
        same = pc.fill_null(pc.equal(stored, expected), False)
        both_null = pc.and_(pc.is_null(stored), pc.is_null(expected))
        wrong = pc.invert(pc.or_(same, both_null)).to_numpy(zero_copy_only=False)
        _first(path, wrong, f"column '{name}' disagrees with the history's pairs", head_rows)
    return heads.drop_columns(["row", LINE]).cast(HEAD_SCHEMA)


def _op_rows(path: str) -> pa.Table:
    """The op-level columns of each op's first row, read a row group's worth
    at a time (a filtered ``read_table`` would decode every row group at
    once). The few-valued string columns are read as dictionaries, so only
    the kept rows' strings are ever built."""
    batches = []
    try:
        file = pq.ParquetFile(path, read_dictionary=list(DICTIONARY_COLUMNS))
        for batch in file.iter_batches(ROW_GROUP, columns=[*HEAD_COLUMNS, "row"]):
            first = pc.equal(batch.column("row"), 0)
            batches.append(batch.filter(first).select(list(HEAD_COLUMNS)))
    except (OSError, pa.ArrowException) as e:
        raise HistoryError(path, None, f"cannot read as Parquet: {e}") from None
    schema = file.schema_arrow
    return pa.Table.from_batches(batches, pa.schema([schema.field(n) for n in HEAD_COLUMNS]))


def _first(path: str, bad: np.ndarray, message: str, rows: np.ndarray | None = None) -> None:
    """Raises ``message`` at the first bad row (``rows`` maps positions to rows)."""
    hits = np.flatnonzero(bad)
    if len(hits):
        row = hits[0] if rows is None else rows[hits[0]]
        raise HistoryError(path, int(row) + 1, message)


def _check_rows(path: str, table: pa.Table) -> None:
    _check_structure(path, table)
    _check_ops(path, table, None)


def _check_structure(path: str, table: pa.Table) -> None:
    """Row numbers count up from 0 within an op, and an op's rows share its index."""
    for name in ("index", "row"):
        nulls = pc.is_null(table[name]).to_numpy(zero_copy_only=False)
        _first(path, nulls, f"column '{name}' is null")
    row = table["row"].to_numpy()
    expected = np.zeros_like(row)
    if len(row):
        expected[1:] = row[:-1] + 1
    _first(path, (row != 0) & (row != expected), "row numbers within an op must count up from 0")
    index = table["index"].to_numpy()
    same_op = np.zeros(len(row), dtype=bool)
    same_op[1:] = index[1:] == index[:-1]
    _first(path, (row != 0) != same_op, "rows of one op must share its index")


def _check_ops(path: str, table: pa.Table, rows: np.ndarray | None) -> None:
    """Op-level fields are present and the op type is known."""
    for name in ("time", "type", "process", "f"):
        nulls = pc.is_null(table[name]).to_numpy(zero_copy_only=False)
        _first(path, nulls, f"column '{name}' is null", rows)
    known = pc.is_in(table["type"], value_set=pa.array(sorted(OP_TYPES))).to_numpy(
        zero_copy_only=False
    )
    _first(path, ~known, "unknown op type (expected invoke, ok, fail or info)", rows)
    _check_extras(path, table, rows)


def _check_extras(path: str, table: pa.Table, rows: np.ndarray | None) -> None:
    """Each ``extra`` is a JSON map whose fields the checker parses have
    their shapes, as the JSON readers check them while flattening."""
    extra = table["extra"].combine_chunks()
    present = np.flatnonzero(pc.is_valid(extra).to_numpy(zero_copy_only=False))
    for at, text in zip(present, extra.drop_null().to_pylist(), strict=True):
        try:
            fields = orjson.loads(text)
            if type(fields) is not dict:
                raise ValueError(f"must be a JSON map, got {describe(fields)}")
            check_extra(fields)
        except ValueError as e:
            row = at if rows is None else rows[at]
            raise HistoryError(path, int(row) + 1, f"column 'extra': {e}") from None
