"""A file of fixed-size entries that mirrors an index held in memory.

The offset index and the transaction index both keep their entries in memory and
write each one in place at ``number * entry size``; both cut the file to a whole
number of entries and fsync it (recording it in the ledger) only when it changed.
"""

from __future__ import annotations

import os
from pathlib import Path

from broker.log.ledger import FsyncLedger


class EntryFile:
    """The file half of an index: where its entries are written, cut and fsynced."""

    def __init__(self, path: Path, entry_size: int) -> None:
        self.path = path
        self._entry_size = entry_size
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._dirty = False  # changed since the last fsync

    def _read_all(self) -> bytes:
        return os.pread(self._fd, os.fstat(self._fd).st_size, 0)

    def _write_entry(self, number: int, data: bytes) -> None:
        os.pwrite(self._fd, data, number * self._entry_size)
        self._dirty = True

    def _truncate_entries(self, count: int) -> None:
        """Cuts the file to its first ``count`` entries."""
        os.ftruncate(self._fd, count * self._entry_size)
        self._dirty = True

    def flush(self, ledger: FsyncLedger) -> None:
        if self._dirty:
            ledger.fsync_fd(self._fd, self.path)
            self._dirty = False

    def close(self) -> None:
        os.close(self._fd)
