"""Histories: the op model, the flat table, and reading/writing/converting the
three formats (jepka JSONL, jepka Parquet, Jepsen EDN)."""

from __future__ import annotations

from checkers.history.errors import HistoryError
from checkers.history.flatten import flatten
from checkers.history.formats import (
    FORMATS,
    convert,
    detect_format,
    read_flat,
    read_ops,
    write_history,
)
from checkers.history.op import Op
from checkers.history.parquet import check_parquet
from checkers.history.schema import FLAT_SCHEMA
from checkers.history.unflatten import unflatten

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
