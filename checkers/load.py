"""Where a check's history comes from: a file, a stored run directory, an Arrow
table or a Spark DataFrame, always ending as a Spark DataFrame of the flat
table (:data:`checkers.history.FLAT_SCHEMA`)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession

from checkers.history import FLAT_SCHEMA, HistoryError, read_flat
from checkers.history.formats import resolve_format

HISTORY_NAMES = ("history.parquet", "history.jsonl", "history.edn")

Source = str | os.PathLike[str] | pa.Table | DataFrame


def history_file(path: str | os.PathLike[str]) -> Path:
    """The history file for ``path``: itself, or the history inside a stored run
    directory (``history.parquet`` preferred, then JSONL, then EDN)."""
    p = Path(path)
    if p.is_dir():
        for name in HISTORY_NAMES:
            if (p / name).is_file():
                return p / name
        raise HistoryError(
            str(p), None, f"no history in this directory ({', '.join(HISTORY_NAMES)})"
        )
    if not p.exists():
        raise HistoryError(str(p), None, "no such file or directory")
    return p


@contextmanager
def as_dataframe(spark: SparkSession, source: Source, fmt: str = "auto") -> Iterator[DataFrame]:
    """The flat table as a DataFrame, valid for the ``with`` block.

    Files are read and checked by the history layer first, so bad input fails
    with a file and line before Spark sees it. Spark then reads Parquet (the
    original when it is one, else a temporary copy): faster than shipping rows
    through the driver.
    """
    if isinstance(source, DataFrame):
        yield source
        return
    if isinstance(source, pa.Table):
        table, original = source, None
    else:
        path = history_file(source)
        kind = resolve_format(str(path), fmt)
        table = read_flat(str(path), kind)
        original = str(path) if kind == "parquet" else None
    with tempfile.TemporaryDirectory(prefix="jepka-check-") as tmp:
        if original is None:
            original = os.path.join(tmp, "history.parquet")
            pq.write_table(table.cast(FLAT_SCHEMA), original, compression="snappy")
        yield spark.read.parquet(original)
