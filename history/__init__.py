"""Histories: the op model, the flat table, and reading/writing/converting the
three formats (jepka JSONL, jepka Parquet, Jepsen EDN)."""

from __future__ import annotations

from history.errors import HistoryError
from history.flatten import flatten
from history.formats import (
    FORMATS,
    convert,
    detect_format,
    read_flat,
    read_ops,
    write_history,
)
from history.op import Op
from history.parquet import check_parquet
from history.schema import FLAT_SCHEMA
from history.unflatten import unflatten

__all__ = [
    "FLAT_SCHEMA",
    "FORMATS",
    "HistoryError",
    "Op",
    "check_parquet",
    "convert",
    "detect_format",
    "flatten",
    "read_flat",
    "read_ops",
    "unflatten",
    "write_history",
]
