"""The aborted-transaction index of one segment (Kafka's ``TransactionIndex``).

Each entry (34 bytes: version int16, producer id, first offset, last offset,
last stable offset as int64s) is written when an abort marker is appended, so a
read_committed fetch can tell clients which producers' ranges to drop.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from broker.log.ledger import FsyncLedger

ENTRY = struct.Struct(">hqqqq")


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._dirty = False  # changed since the last fsync
        self.entries: list[AbortedTxn] = []

    def load(self) -> None:
        """Reads whole entries; a torn trailing entry is cut off."""
        size = os.fstat(self._fd).st_size
        whole = size - size % ENTRY.size
        if whole != size:
            os.ftruncate(self._fd, whole)
            self._dirty = True
        data = os.pread(self._fd, whole, 0)
        self.entries = [AbortedTxn(*fields[1:]) for fields in ENTRY.iter_unpack(data)]

    def append(self, txn: AbortedTxn) -> None:
        if any(
            e.producer_id == txn.producer_id and e.first_offset == txn.first_offset
            for e in self.entries
        ):
            return
        data = ENTRY.pack(
            0, txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset
        )
        os.pwrite(self._fd, data, len(self.entries) * ENTRY.size)
        self.entries.append(txn)
        self._dirty = True

    def truncate_to(self, offset: int) -> None:
        """Drops aborts whose marker lies at or past ``offset`` (a suffix: entries
        are appended in marker order)."""
        self.entries = [e for e in self.entries if e.last_offset < offset]
        os.ftruncate(self._fd, len(self.entries) * ENTRY.size)
        self._dirty = True

    def flush(self, ledger: FsyncLedger) -> None:
        if self._dirty:
            ledger.fsync_fd(self._fd, self.path)
            self._dirty = False

    def close(self) -> None:
        os.close(self._fd)
