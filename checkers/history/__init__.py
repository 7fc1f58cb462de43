"""Histories: the op model, the flat table, and reading/writing/converting the
three formats (jepka JSONL, jepka Parquet, Jepsen EDN)."""

from __future__ import annotations

from checkers.history.errors import HistoryError
from checkers.history.flatten import flatten
from checkers.history.formats import FORMATS, detect_format, read_flat
from checkers.history.op import Op
from checkers.history.schema import FLAT_SCHEMA

__all__ = ["FLAT_SCHEMA", "FORMATS", "HistoryError", "Op", "detect_format", "flatten", "read_flat"]
