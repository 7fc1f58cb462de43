"""Pairing invocations with completions, and the history-order checks that
need the whole history: vectorised over the op-start rows of the flat table so
chunks flattened in parallel are checked as one history.

Rules (Jepsen's): per process, ops alternate ``invoke``, completion; a
completion needs an outstanding invocation with the same ``f``; a process
never has two invocations outstanding. Indices strictly increase in file order.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from history.errors import HistoryError
from history.schema import FLAT_SCHEMA, LINE


def _encode(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, list]:
    """Small integer codes of a string or dictionary column (equal values,
    equal codes) and the values they stand for. Codes are 16-bit when they
    fit, so that sorting by them is a radix sort (six times faster than the
    merge sort of wider integers)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()  # unifies the chunks' dictionaries
    if not pa.types.is_dictionary(arr.type):
        arr = pc.dictionary_encode(arr)
    codes = arr.indices.to_numpy(zero_copy_only=False)
    values = arr.dictionary.to_pylist()
    return (codes.astype(np.int16) if len(values) <= 1 << 15 else codes), values


def _shift(a: np.ndarray, fill) -> np.ndarray:
    out = np.empty_like(a)
    out[0] = fill
    out[1:] = a[:-1]
    return out


def attach_pairs(table: pa.Table, path: str) -> pa.Table:
    """Checks history order and fills ``pair_index``/``pair_time``. Uses the
    ``_line`` column for error lines when present (dropping it), else the
    1-based row number. Returns the table in :data:`FLAT_SCHEMA` order."""
    pair_index, pair_time = compute_pairs(table, path)
    stale = [c for c in (LINE, "pair_index", "pair_time") if c in table.column_names]
    table = table.drop_columns(stale)
    table = table.append_column("pair_index", pair_index).append_column("pair_time", pair_time)
    return table.select(FLAT_SCHEMA.names).cast(FLAT_SCHEMA)


def compute_pairs(table: pa.Table, path: str) -> tuple[pa.Array, pa.Array]:
    """Checks history order; returns the per-row ``pair_index`` and
    ``pair_time``. Needs only the columns row, index, time, type, process, f
    (and ``_line`` if present); string columns may be dictionaries."""
    row = table["row"].to_numpy()
    is_head = row == 0
    # One row per op (the op rows of a Parquet file): op i is row i, and
    # nothing needs gathering or spreading back over the rows.
    every_row = bool(is_head.all())
    heads = None if every_row else np.flatnonzero(is_head)

    def per_op(name: str) -> np.ndarray:
        values = table[name].to_numpy()
        return values if heads is None else values[heads]

    def op_column(name: str) -> pa.ChunkedArray:
        return table[name] if heads is None else table[name].take(heads)

    index, time = per_op("index"), per_op("time")
    n = len(index)
    if LINE in table.column_names:
        lines = per_op(LINE)
    else:
        lines = np.arange(1, n + 1) if heads is None else heads + 1
    pair_op = np.full(n, -1, dtype=np.int64)
    if n:
        _check_order(path, index, lines)
        process, f = op_column("process"), op_column("f")
        type_codes, types = _encode(op_column("type"))
        is_inv = type_codes == types.index("invoke") if "invoke" in types else np.zeros(n, bool)
        process_codes = _encode(process)[0]
        order = np.argsort(process_codes, kind="stable")
        sp = process_codes[order]
        si = is_inv[order]
        sf = _encode(f)[0][order]
        prev_inv = _shift(si, False) & (_shift(sp, -1) == sp)
        completion = ~si
        problems = {
            "orphan": completion & ~prev_inv,
            "double": si & prev_inv,
            "mismatch": completion & prev_inv & (_shift(sf, -1) != sf),
        }
        _raise_first(path, problems, order, lines, process, f)
        done = np.flatnonzero(completion & prev_inv)
        pair_op[order[done]] = order[done - 1]
        pair_op[order[done - 1]] = order[done]
    partner = pair_op if heads is None else pair_op[np.cumsum(is_head) - 1]
    missing = partner < 0
    safe = np.where(missing, 0, partner)
    return pa.array(index[safe], mask=missing), pa.array(time[safe], mask=missing)


def _check_order(path: str, index: np.ndarray, lines: np.ndarray) -> None:
    bad = np.flatnonzero(index[1:] <= index[:-1])
    if len(bad):
        i = bad[0] + 1
        raise HistoryError(
            path,
            int(lines[i]),
            f"index {index[i]} is not greater than the previous op's index {index[i - 1]}",
        )


def _raise_first(path, problems, order, lines, process, f) -> None:
    """Raises the problem found earliest in the file, described in words."""
    found = []
    for kind, mask in problems.items():
        hits = np.flatnonzero(mask)
        if len(hits):
            k = int(hits[np.argmin(lines[order[hits]])])
            found.append((int(lines[order[k]]), k, kind))
    if not found:
        return
    line, k, kind = min(found)
    op, prev = int(order[k]), int(order[k - 1])
    proc, fname = process[op].as_py(), f[op].as_py()
    if kind == "orphan":
        msg = f"completion of '{fname}' by process {proc} without an outstanding invocation"
    elif kind == "double":
        msg = (
            f"process {proc} invokes '{fname}' while its invocation at line "
            f"{int(lines[prev])} is still outstanding"
        )
    else:
        msg = (
            f"completion by process {proc} has f '{fname}' but its invocation at line "
            f"{int(lines[prev])} has f '{f[prev].as_py()}'"
        )
    raise HistoryError(path, line, msg)
