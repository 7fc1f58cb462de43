"""One log segment: ``<base offset>.log`` with its ``.index`` and ``.txnindex``.

Files are named by the 20-digit base offset, as in Kafka, so an operator's
tools (and the power-loss fault) can read the layout without the broker.
"""

from __future__ import annotations

import bisect
import os
import time
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path

from broker.log.batch import (
    HEADER_SIZE,
    INT32_MAX,
    BatchHeader,
    CorruptBatch,
    check_batch,
    parse_header,
)
from broker.log.index import CorruptIndex, OffsetIndex
from broker.log.ledger import FsyncLedger
from broker.log.txn_index import TransactionIndex

READ_CHUNK = 1 << 20
#: how many of its last appended batches the active segment keeps in memory
#: (between this and twice this): caught-up followers and consumers read from
#: among them, without searching the file
RECENT_BATCHES = 64


def file_stem(offset: int) -> str:
    return f"{offset:020d}"


class LogSegment:
    def __init__(
        self, directory: Path, base_offset: int, index_interval: int, ledger: FsyncLedger
    ) -> None:
        self.base_offset = base_offset
        self.path = directory / f"{file_stem(base_offset)}.log"
        self.ledger = ledger
        self.index_interval = index_interval
        created = not self.path.exists()
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        self.dirty = False  # appended to since the last fsync
        self.size = os.fstat(self._fd).st_size
        self.index = OffsetIndex(directory / f"{file_stem(base_offset)}.index", base_offset)
        self.txn_index = TransactionIndex(directory / f"{file_stem(base_offset)}.txnindex")
        if created:
            for path in (self.path, self.index.path, self.txn_index.path):
                ledger.record(path, 0)
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.created_at = time.time()
        self._bytes_since_index = 0
        # the last appended batches, oldest first: (position, header)
        self._recent: list[tuple[int, BatchHeader]] = []

    # -- loading and recovery ------------------------------------------------
    def load(self, validate: bool) -> CorruptBatch | None:
        """Scans the segment to learn its end offset and largest timestamp.

        With ``validate`` every batch's CRC is checked and the index rebuilt;
        on the first bad batch the file is cut there (a torn write) and the
        error returned. Without it, the index is trusted unless it is corrupt.
        """
        self.txn_index.load()
        self.forget_recent()
        if not validate:
            try:
                self.index.load(self.size)
            except CorruptIndex:
                validate = True
        if validate:
            self.index.reset()
            self._bytes_since_index = 0
        error = None
        end = 0
        try:
            for pos, header in self.iter_headers(0, validate=validate):
                if validate:
                    self._check_offsets(header, pos)
                    self._maybe_index(header, pos)
                self._note(header)
                end = pos + header.size
        except CorruptBatch as e:
            error = e
        if end != self.size:
            self.truncate_to_position(end)
        return error

    def _check_offsets(self, header: BatchHeader, pos: int) -> None:
        """Base offsets lie outside the CRC: they must rise, and stay within the
        segment's int32 range of relative offsets."""
        expected = self.next_offset if pos else self.base_offset
        if (
            not expected
            <= header.base_offset
            <= self.base_offset + INT32_MAX - header.last_offset_delta
        ):
            raise CorruptBatch(
                f"{self.path}: batch at byte {pos} has base offset {header.base_offset}"
            )

    def iter_headers(self, start: int, validate: bool = False) -> Iterator[tuple[int, BatchHeader]]:
        """Yields ``(position, header)`` from byte ``start``; raises ``CorruptBatch``
        at a torn or bad batch. With ``validate``, CRCs are checked too."""
        pos = start
        buf = b""
        buf_start = pos
        while pos < self.size:
            need = HEADER_SIZE
            if pos + need > buf_start + len(buf):
                buf_start, buf = pos, os.pread(self._fd, READ_CHUNK, pos)
            header = parse_header(buf, pos - buf_start)
            if header.length < HEADER_SIZE - 12 or pos + header.size > self.size:
                raise CorruptBatch(f"{self.path}: torn or bad batch at byte {pos}")
            if validate:
                if pos + header.size > buf_start + len(buf):
                    buf_start, buf = pos, os.pread(self._fd, max(READ_CHUNK, header.size), pos)
                check_batch(buf, pos - buf_start, header)
            yield pos, header
            pos += header.size

    # -- appends -------------------------------------------------------------
    def append(self, data: bytes | bytearray, headers: list[tuple[int, BatchHeader]]) -> None:
        """Appends already-stamped batches; ``headers`` give their relative positions."""
        start = self.size
        os.pwrite(self._fd, data, start)
        self.dirty = True
        self.size += len(data)
        for pos, header in headers:
            self._maybe_index(header, start + pos)
            self._note(header)
            self._recent.append((start + pos, header))
        if len(self._recent) > 2 * RECENT_BATCHES:
            del self._recent[: len(self._recent) - RECENT_BATCHES]

    def _maybe_index(self, header: BatchHeader, pos: int) -> None:
        if self._bytes_since_index >= self.index_interval:
            self.index.append(header.base_offset, pos)
            self._bytes_since_index = 0
        self._bytes_since_index += header.size

    def forget_recent(self, pos: int = 0) -> None:
        """Drops the recent batches that reach past byte ``pos``: truncated away,
        or all of them when the segment is loaded or no longer the active one
        (its few readers then go through the index)."""
        while self._recent and self._recent[-1][0] + self._recent[-1][1].size > pos:
            self._recent.pop()

    def _note(self, header: BatchHeader) -> None:
        self.next_offset = header.next_offset
        self.max_timestamp = max(self.max_timestamp, header.max_timestamp)

    # -- reads ---------------------------------------------------------------
    def find(self, offset: int) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch containing an offset >= ``offset``."""
        for found in self._batches_from(offset):
            return found
        return None

    def _batches_from(self, offset: int) -> Iterable[tuple[int, BatchHeader]]:
        """``(position, header)`` of each batch from the one holding the first
        offset >= ``offset``: from the recent batches when they hold it, else
        from the file, after the index's entry at or before it."""
        recent = self._recent
        if recent and recent[0][1].base_offset <= offset <= recent[-1][1].last_offset:
            first = bisect.bisect_left(recent, offset, key=lambda batch: batch[1].last_offset)
            return islice(recent, first, None)
        _, pos = self.index.lookup(offset)
        return (
            (batch_pos, header)
            for batch_pos, header in self.iter_headers(pos)
            if header.last_offset >= offset
        )

    def read(self, offset: int, max_bytes: int, upper: int, min_one: bool) -> bytes:
        """Whole batches from the one holding ``offset``, stopping before ``upper``
        (exclusive) or ``max_bytes`` (but at least one batch if ``min_one``)."""
        start = end = -1
        for pos, header in self._batches_from(offset):
            if start < 0:
                start = end = pos
            if header.base_offset >= upper:
                break
            if pos + header.size - start > max_bytes and not (min_one and pos == start):
                break
            end = pos + header.size
        return os.pread(self._fd, end - start, start) if end > start else b""

    def read_at(self, pos: int, size: int) -> bytes:
        return os.pread(self._fd, size, pos)

    # -- truncation, flush, lifecycle -----------------------------------------
    def truncate_to(self, offset: int) -> None:
        """Removes every batch at or after ``offset`` (a batch boundary)."""
        found = self.find(offset)
        if found is not None:
            self.truncate_to_position(found[0])
            self.next_offset = max(self.base_offset, offset)
        self.txn_index.truncate_to(offset)

    def replace(self, data: bytes) -> None:
        """Swaps in new contents (a compacted copy) atomically and durably, then
        rebuilds the index; offsets and the end offset must be unchanged."""
        self.ledger.write_atomically(self.path, data)
        os.close(self._fd)
        self._fd = os.open(self.path, os.O_RDWR)
        self.size = len(data)
        self.dirty = False
        self.max_timestamp = -1
        self.load(validate=True)

    def truncate_to_position(self, pos: int) -> None:
        os.ftruncate(self._fd, pos)
        self.size = pos
        self.forget_recent(pos)
        self.index.truncate_to_position(pos)
        self.ledger.fsync_fd(self._fd, self.path)

    def flush(self) -> None:
        if self.dirty:
            self.ledger.fsync_fd(self._fd, self.path)
            self.dirty = False
        self.index.flush(self.ledger)
        self.txn_index.flush(self.ledger)

    def close(self) -> None:
        os.close(self._fd)
        self.index.close()
        self.txn_index.close()

    def delete(self) -> None:
        self.close()
        for path in (self.path, self.index.path, self.txn_index.path):
            path.unlink(missing_ok=True)
