"""One entry point per direction for the three history formats, with format
auto-detection: jepka ``history.jsonl``, jepka ``history.parquet`` (the flat
table) and Jepsen ``history.edn``."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from history.edn import read_edn_unpaired
from history.errors import HistoryError
from history.jsonl import read_jsonl_unpaired
from history.op import Op
from history.pairing import attach_pairs
from history.parquet import read_parquet_flat, write_parquet
from history.unflatten import unflatten
from history.writers import write_ops

FORMATS = ("jsonl", "parquet", "jepsen-edn")
EXTENSIONS = {".jsonl": "jsonl", ".json": "jsonl", ".parquet": "parquet", ".edn": "jepsen-edn"}
PARQUET_MAGIC = b"PAR1"


def format_from_extension(path: str) -> str | None:
    return EXTENSIONS.get(os.path.splitext(str(path))[1].lower())


def detect_format(path: str) -> str:
    """The format of a history file: Parquet by its magic bytes, otherwise the
    first non-blank character (``{`` JSON; ``{:``, ``#`` or ``;`` EDN)."""
    path = str(path)
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as e:
        raise HistoryError(path, None, f"cannot read: {e.strerror}") from None
    if head.startswith(PARQUET_MAGIC):
        return "parquet"
    text = head.lstrip()
    if text.startswith((b"{:", b";", b"#", b"[{:")) or (
        text.startswith(b"{") and b'"' not in text[:3]
    ):
        return "jepsen-edn"
    if text.startswith(b"{"):
        return "jsonl"
    if not text:
        return format_from_extension(path) or "jsonl"
    raise HistoryError(path, 1, "not a history: expected JSON Lines, Jepsen EDN or Parquet")


def resolve_format(path: str, fmt: str = "auto") -> str:
    if fmt == "auto":
        return detect_format(path)
    if fmt not in FORMATS:
        raise HistoryError(
            str(path), None, f"unknown format '{fmt}' (expected auto, {', '.join(FORMATS)})"
        )
    return fmt


def read_flat(
    path: str | os.PathLike[str], fmt: str = "auto", workers: int | None = None
) -> pa.Table:
    """Any history file → the checked, paired flat table (:data:`FLAT_SCHEMA`).
    ``workers`` caps the processes used for big JSONL files (default: one per core)."""
    path = str(path)
    fmt = resolve_format(path, fmt)
    if fmt == "parquet":
        return read_parquet_flat(path)
    if fmt == "jsonl":
        return attach_pairs(read_jsonl_unpaired(path, workers), path)
    return attach_pairs(read_edn_unpaired(path), path)


def read_ops(path: str | os.PathLike[str], fmt: str = "auto") -> Iterator[Op]:
    """Any history file → its checked ops, in order."""
    return unflatten(read_flat(path, fmt), str(path))


def write_history(ops: Iterable[Op], path: str | os.PathLike[str], fmt: str | None = None) -> int:
    """Writes ops in ``fmt`` (default: from the extension); returns how many."""
    path = str(path)
    fmt = fmt or format_from_extension(path)
    if fmt is None:
        raise HistoryError(path, None, "cannot tell the format from the extension; name one")
    return write_ops(ops, path, fmt)


def convert(src: str, dst: str, src_format: str = "auto", dst_format: str | None = None) -> int:
    """Converts a history between formats (checking it on the way); returns
    the number of ops written."""
    dst_format = dst_format or format_from_extension(dst)
    if dst_format not in FORMATS:
        raise HistoryError(
            dst, None, "cannot tell the output format from the extension (.jsonl, .parquet, .edn)"
        )
    table = read_flat(src, src_format)
    try:
        if dst_format == "parquet":
            write_parquet(table, dst)
            return int(pc.sum(pc.equal(table["row"], 0)).as_py() or 0)
        return write_ops(unflatten(table, src), dst, dst_format)
    except OSError as e:
        raise HistoryError(dst, None, f"cannot write: {e.strerror or e}") from None
