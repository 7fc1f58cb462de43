"""Writing ops in any of the three formats, streaming where the format allows."""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from checkers.history.edn import write_edn
from checkers.history.errors import HistoryError
from checkers.history.fields import check_core
from checkers.history.flatten import FlatBuilder
from checkers.history.jsonl import write_jsonl
from checkers.history.op import Op
from checkers.history.pairing import attach_pairs
from checkers.history.parquet import write_parquet

BLOCK_OPS = 200_000


def flatten_stream(ops: Iterable[Op], source: str = "<ops>") -> pa.Table:
    """Flattens ops in blocks (bounded Python memory), then pairs them."""
    tables = []
    builder = FlatBuilder()
    for n, op in enumerate(ops, 1):
        try:
            builder.add(*check_core(op.to_dict()), n)
        except ValueError as e:
            raise HistoryError(source, n, str(e)) from None
        if len(builder) >= BLOCK_OPS:
            tables.append(_build(builder, source))
            builder = FlatBuilder()
    tables.append(_build(builder, source))
    return attach_pairs(pa.concat_tables(tables), source)


def _build(builder: FlatBuilder, source: str) -> pa.Table:
    try:
        return builder.build()
    except ValueError as e:
        raise HistoryError(source, None, str(e)) from None


def write_ops(ops: Iterable[Op], path: str, fmt: str) -> int:
    """Writes ops to ``path`` in ``fmt``; returns how many ops (lines)."""
    if fmt == "jsonl":
        return write_jsonl(ops, path)
    if fmt == "parquet":
        table = flatten_stream(ops)
        write_parquet(table, path)
        return int((table["row"].to_numpy() == 0).sum())
    if fmt == "jepsen-edn":
        return write_edn(ops, path)
    raise ValueError(f"unknown history format {fmt!r}")
