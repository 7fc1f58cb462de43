"""Where a check's history comes from: a file, a stored run directory, an Arrow
table or a Spark DataFrame, always ending as a Spark DataFrame of the flat
table (:data:`history.FLAT_SCHEMA`).

Reading is split from handing to Spark so that files are parsed and checked
(bad input fails with a file and line) while the JVM is still starting.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from history import FLAT_SCHEMA, HistoryError, check_parquet, read_flat
from history.formats import resolve_format
from history.parquet import HEAD_COLUMNS

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


@dataclass
class Loaded:
    """A checked history: a flat table, a checked Parquet file Spark reads
    directly, or a DataFrame the caller vouches for."""

    table: pa.Table | None = None
    parquet: str | None = None
    frame: DataFrame | None = None
    parquet_heads: pa.Table | None = None  # what checking the Parquet file read

    def take_heads(self) -> pa.Table:
        """:meth:`heads` of a file or table source, no longer kept here (for
        10M ops they hold a gigabyte)."""
        heads = self.heads()
        self.parquet_heads = None
        return heads

    def heads(self, raw: DataFrame | None = None) -> pa.Table:
        """Each op's first row (:data:`HEAD_COLUMNS`): one row per op, which
        the driver holds anyway (the cycle search needs every op). Only a
        DataFrame source needs ``raw`` (Spark collects them)."""
        if self.parquet_heads is not None:
            return self.parquet_heads
        if self.table is not None:
            return self.table.filter(pc.equal(self.table.column("row"), 0)).select(
                list(HEAD_COLUMNS)
            )
        assert raw is not None, "a DataFrame source's heads come from Spark"
        return raw.where(F.col("row") == 0).select(*HEAD_COLUMNS).toArrow()

    @property
    def rows(self) -> int | None:
        if self.table is not None:
            return self.table.num_rows
        if self.parquet is not None:
            return pq.ParquetFile(self.parquet).metadata.num_rows
        return None


def read_source(source: Source, fmt: str = "auto") -> Loaded:
    if isinstance(source, DataFrame):
        return Loaded(frame=source)
    if isinstance(source, pa.Table):
        return Loaded(table=source)
    path = history_file(source)
    kind = resolve_format(str(path), fmt)
    if kind == "parquet":
        # Checked without loading it: Spark scans the file itself, so the
        # driver never holds a 10M-op history.
        return Loaded(parquet=str(path), parquet_heads=check_parquet(str(path)))
    return Loaded(read_flat(str(path), kind))


@contextmanager
def as_dataframe(spark: SparkSession, loaded: Loaded) -> Iterator[DataFrame]:
    """The history as a DataFrame, valid for the ``with`` block. Spark reads
    Parquet (the original file, else a temporary copy): faster than shipping
    rows through the driver."""
    if loaded.frame is not None:
        yield loaded.frame
        return
    if loaded.parquet is not None:
        yield spark.read.parquet(loaded.parquet)
        return
    assert loaded.table is not None
    with tempfile.TemporaryDirectory(prefix="jepka-check-") as tmp:
        path = os.path.join(tmp, "history.parquet")
        pq.write_table(loaded.table.cast(FLAT_SCHEMA), path, compression="snappy")
        yield spark.read.parquet(path)
