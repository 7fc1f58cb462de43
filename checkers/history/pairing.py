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

from checkers.history.errors import HistoryError
from checkers.history.schema import FLAT_SCHEMA, LINE


def _codes(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Small integer codes of a string column (equal strings, equal codes)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return pc.dictionary_encode(arr).indices.to_numpy(zero_copy_only=False)


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
    (and ``_line`` if present)."""
    n_rows = table.num_rows
    row = table["row"].to_numpy()
    heads = np.flatnonzero(row == 0)
    lines = table[LINE].to_numpy()[heads] if LINE in table.column_names else heads + 1
    n = len(heads)
    index = table["index"].to_numpy()[heads]
    time = table["time"].to_numpy()[heads]
    pair_op = np.full(n, -1, dtype=np.int64)
    if n:
        _check_order(path, index, lines)
        every_row = n == n_rows  # one row per op: no need to copy the op rows out
        process = table["process"] if every_row else table["process"].take(heads)
        f = table["f"] if every_row else table["f"].take(heads)
        op_type = table["type"] if every_row else table["type"].take(heads)
        is_inv = pc.equal(op_type, "invoke").to_numpy(zero_copy_only=False)
        process_codes = _codes(process)
        order = np.argsort(process_codes, kind="stable")
        sp = process_codes[order]
        si = is_inv[order]
        sf = _codes(f)[order]
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
    op_of_row = np.cumsum(row == 0) - 1 if n_rows else np.zeros(0, dtype=np.int64)
    partner = pair_op[op_of_row]
    missing = partner < 0
    safe = np.where(missing, 0, partner)
    pair_index = pa.array(index[safe] if n else np.zeros(0, np.int64), mask=missing)
    pair_time = pa.array(time[safe] if n else np.zeros(0, np.int64), mask=missing)
    return pair_index, pair_time


def _check_order(path: str, index: np.ndarray, lines: np.ndarray) -> None:
    bad = np.flatnonzero(np.diff(index) <= 0)
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
