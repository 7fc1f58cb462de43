"""jepka's ``history.jsonl``: one JSON op per line (docs/architecture.md,
"Formats"). Reading goes straight to the flat table, in blocks (bounded memory)
and, for big files, in one process per core; writing streams ops.

A final line without a newline that does not parse is what a run killed
mid-write leaves behind: it is dropped with a warning, so the run can still
be checked. Anywhere else, a malformed line is an error.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import BinaryIO

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from history.errors import HistoryError
from history.fields import check_core
from history.flatten import FlatBuilder
from history.op import Op
from history.schema import LINE

log = logging.getLogger(__name__)

BLOCK_BYTES = 8 << 20  # lines flattened per block: bounds the Python lists' memory
PARALLEL_BYTES = 64 << 20  # below this, one process is faster than starting workers


def _flatten_block(path: str, lines: list[bytes], first_line: int, last_block: bool) -> pa.Table:
    builder = FlatBuilder()
    add = builder.add
    last = len(lines) - 1
    for n, raw in enumerate(lines):
        try:
            d = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            if not raw.strip():
                continue
            if last_block and n == last:
                log.warning("%s:%d: ignoring an incomplete last line", path, first_line + n)
                continue
            raise HistoryError(path, first_line + n, f"malformed JSON: {e}") from None
        if type(d) is not dict:
            raise HistoryError(path, first_line + n, "expected a JSON object (one op per line)")
        try:
            add(*check_core(d), first_line + n)
        except ValueError as e:
            raise HistoryError(path, first_line + n, str(e)) from None
    try:
        return builder.build()
    except ValueError as e:
        raise HistoryError(path, None, str(e)) from None


def _blocks(f: BinaryIO, start: int, end: int):
    """Yields ``(lines, unterminated)`` for the whole lines between two byte
    positions that each start a line; only the file's last line may lack its
    newline (then ``unterminated`` is true)."""
    f.seek(start)
    pos, rest = start, b""
    while pos < end:
        data = f.read(min(BLOCK_BYTES, end - pos))
        if not data:
            break
        pos += len(data)
        data = rest + data
        rest = b""
        if pos < end:
            cut = data.rfind(b"\n") + 1
            rest, data = data[cut:], data[:cut]
            if not data:
                continue
        lines = data.split(b"\n")
        unterminated = lines[-1] != b""
        if not unterminated:
            lines.pop()
        yield lines, unterminated


def _flatten_range(path: str, start: int, end: int, last_range: bool) -> tuple[pa.Table, int]:
    """Flattens the lines in ``[start, end)``; line numbers count from 1 at
    ``start``. Returns the unpaired table and the number of lines."""
    tables = []
    line = 1
    with open(path, "rb") as f:
        for lines, unterminated in _blocks(f, start, end):
            tables.append(_flatten_block(path, lines, line, last_range and unterminated))
            line += len(lines)
    if not tables:
        tables.append(FlatBuilder().build())
    return pa.concat_tables(tables), line - 1


def _line_starts(path: str, size: int, parts: int) -> list[int]:
    """Byte positions that split the file into about ``parts`` runs of whole lines."""
    cuts = [0]
    with open(path, "rb") as f:
        for i in range(1, parts):
            f.seek(size * i // parts)
            f.readline()
            pos = f.tell()
            if cuts[-1] < pos < size:
                cuts.append(pos)
    return [*cuts, size]


def read_jsonl_unpaired(path: str, workers: int | None = None) -> pa.Table:
    """The flat table of a JSONL history before pairing (with ``_line``)."""
    try:
        size = os.path.getsize(path)
    except OSError as e:
        raise HistoryError(path, None, f"cannot read: {e.strerror}") from None
    if workers is None:
        workers = (os.cpu_count() or 1) if size >= PARALLEL_BYTES else 1
    try:
        cuts = _line_starts(path, size, max(1, workers))
        ranges = [(path, a, b, b == size) for a, b in itertools.pairwise(cuts)]
        if len(ranges) == 1:
            results = [_flatten_range(*ranges[0])]
        else:
            with ProcessPoolExecutor(len(ranges), mp_context=get_context("spawn")) as pool:
                futures = [pool.submit(_flatten_range, *r) for r in ranges]
                results = []
                for fut in futures:  # in file order, so the earliest error wins
                    try:
                        results.append(fut.result())
                    except HistoryError as e:
                        offset = sum(n for _, n in results)
                        raise HistoryError(e.path, _shift(e.line, offset), e.message) from None
    except OSError as e:
        raise HistoryError(path, None, f"cannot read: {e.strerror}") from None
    tables, offset = [], 0
    for table, n in results:
        if offset:
            i = table.column_names.index(LINE)
            table = table.set_column(i, LINE, pc.add(table[LINE], offset))
        tables.append(table)
        offset += n
    return pa.concat_tables(tables)


def _shift(line: int | None, offset: int) -> int | None:
    return None if line is None else line + offset


def write_jsonl(ops: Iterable[Op], path: str) -> int:
    """Writes ops one per line; returns how many."""
    n = 0
    opt = orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE
    with open(path, "wb") as f:
        buf = []
        for op in ops:
            buf.append(orjson.dumps(op.to_dict(), option=opt))
            n += 1
            if len(buf) >= 4096:
                f.write(b"".join(buf))
                buf.clear()
        f.write(b"".join(buf))
    return n
