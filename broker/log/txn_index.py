"""The aborted-transaction index of one segment (Kafka's ``TransactionIndex``).

Each entry (34 bytes: version int16, producer id, first offset, last offset,
last stable offset as int64s) is written when an abort marker is appended, so a
read_committed fetch can tell clients which producers' ranges to drop.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from broker.log.entry_file import EntryFile

ENTRY = struct.Struct(">hqqqq")


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex(EntryFile):
    def __init__(self, path: Path) -> None:
        super().__init__(path, ENTRY.size)
        self.entries: list[AbortedTxn] = []

    def load(self) -> None:
        """Reads whole entries; a torn trailing entry is cut off."""
        data = self._read_all()
        if torn := len(data) % ENTRY.size:
            data = data[:-torn]
            self._truncate_entries(len(data) // ENTRY.size)
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
        self._write_entry(len(self.entries), data)
        self.entries.append(txn)

    def truncate_to(self, offset: int) -> None:
        """Drops aborts whose marker lies at or past ``offset`` (a suffix: entries
        are appended in marker order)."""
        self.entries = [e for e in self.entries if e.last_offset < offset]
        self._truncate_entries(len(self.entries))
