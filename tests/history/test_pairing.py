"""Pairing invocations with completions: the vectorised pairing agrees with a
plain walk through the history, whatever the shape of the table it is given
(several rows per op or one, strings or dictionaries, few or many processes)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from history.pairing import compute_pairs

FUNCTIONS = ("send", "poll", "txn", "assign")


def _walk_pairs(types: list[str], processes: list[str]) -> list[int | None]:
    """Each op's partner position, by walking the history in order."""
    outstanding: dict[str, int] = {}
    partner: list[int | None] = [None] * len(types)
    for i, (t, p) in enumerate(zip(types, processes, strict=True)):
        if t == "invoke":
            outstanding[p] = i
        else:
            j = outstanding.pop(p)
            partner[i], partner[j] = j, i
    return partner


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[str], list[str], list[str], list[int]]:
    """A well-formed history: per process, invocations and completions alternate
    with the same function; the last invocation may stay open (a crash)."""
    n_processes = draw(st.integers(1, 6))
    steps = draw(st.lists(st.integers(0, n_processes - 1), max_size=60))
    open_f: dict[int, str] = {}
    types, processes, fs = [], [], []
    for p in steps:
        if p in open_f:
            types.append(draw(st.sampled_from(("ok", "fail", "info"))))
            fs.append(open_f.pop(p))
        else:
            open_f[p] = draw(st.sampled_from(FUNCTIONS))
            types.append("invoke")
            fs.append(open_f[p])
        processes.append(str(p))
    rows = draw(st.lists(st.integers(1, 3), min_size=len(types), max_size=len(types)))
    return types, processes, fs, rows


def _table(types, processes, fs, rows_per_op, dictionaries: bool) -> pa.Table:
    op = np.repeat(np.arange(len(types)), rows_per_op)
    row = np.concatenate([np.arange(n) for n in rows_per_op]) if len(types) else op

    def strings(values: list[str]) -> pa.Array:
        arr = pa.array([values[i] for i in op], pa.string())
        return arr.dictionary_encode() if dictionaries else arr

    return pa.table(
        {
            "row": pa.array(row, pa.int32()),
            "index": pa.array(op * 2, pa.int64()),
            "time": pa.array(op * 10 + 7, pa.int64()),
            "type": strings(types),
            "process": strings(processes),
            "f": strings(fs),
        }
    )


@settings(max_examples=200, deadline=None)
@given(histories(), st.booleans(), st.booleans())
def test_pairs_match_a_walk_through_the_history(history, one_row_per_op, dictionaries) -> None:
    types, processes, fs, rows = history
    rows_per_op = [1] * len(types) if one_row_per_op else rows
    pair_index, pair_time = compute_pairs(
        _table(types, processes, fs, rows_per_op, dictionaries), "h"
    )
    partner = _walk_pairs(types, processes)
    expected = [p for p, n in zip(partner, rows_per_op, strict=True) for _ in range(n)]
    assert pair_index.to_pylist() == [None if p is None else 2 * p for p in expected]
    assert pair_time.to_pylist() == [None if p is None else 10 * p + 7 for p in expected]


def test_more_processes_than_sixteen_bit_codes_hold() -> None:
    """Past 32768 distinct processes the codes stay 32-bit and pairs stay
    right: here every process has an invocation outstanding at once, so two
    processes sharing a 16-bit code would look like one invoking twice."""
    n = 70_000
    processes = [str(p) for p in range(n)] * 2
    types = ["invoke"] * n + ["ok"] * n
    table = _table(types, processes, ["send"] * 2 * n, [1] * 2 * n, False)
    pair_index, _ = compute_pairs(table, "h")
    got = np.asarray(pair_index.to_numpy(zero_copy_only=False))
    assert (got[:n] == 2 * (np.arange(n) + n)).all()
    assert (got[n:] == 2 * np.arange(n)).all()
