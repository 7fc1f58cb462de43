"""Writing ops in any of the three formats, streaming where the format allows."""

from __future__ import annotations

from collections.abc import Iterable

from history.edn import write_edn
from history.flatten import flatten
from history.jsonl import write_jsonl
from history.op import Op
from history.parquet import write_parquet


def write_ops(ops: Iterable[Op], path: str, fmt: str) -> int:
    """Writes ops to ``path`` in ``fmt``; returns how many ops (lines)."""
    if fmt == "jsonl":
        return write_jsonl(ops, path)
    if fmt == "parquet":
        table = flatten(ops)
        write_parquet(table, path)
        return int((table["row"].to_numpy() == 0).sum())
    if fmt == "jepsen-edn":
        return write_edn(ops, path)
    raise ValueError(f"unknown history format {fmt!r}")
