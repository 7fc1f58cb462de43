"""The sparse offset index of one segment (Kafka's ``OffsetIndex``).

Entries are 8 bytes, ``(offset - base_offset, position)`` as big-endian int32s,
added every ``index.interval.bytes`` of log. It is kept in memory for lookups
and mirrored to the ``.index`` file; being derived data, a missing or corrupt
file is rebuilt from the log instead of trusted.
"""

from __future__ import annotations

import bisect
import struct
from array import array
from pathlib import Path

from broker.log.entry_file import EntryFile

ENTRY = struct.Struct(">ii")


class CorruptIndex(ValueError):
    pass


class OffsetIndex(EntryFile):
    def __init__(self, path: Path, base_offset: int) -> None:
        super().__init__(path, ENTRY.size)
        self.base_offset = base_offset
        self.offsets = array("q")
        self.positions = array("q")

    def load(self, log_size: int) -> None:
        """Reads the file; raises ``CorruptIndex`` if it cannot describe a log of ``log_size``."""
        data = self._read_all()
        if len(data) % ENTRY.size:
            raise CorruptIndex(f"{self.path}: size {len(data)} is not a multiple of {ENTRY.size}")
        last_offset, last_position = -1, -1
        for relative, position in ENTRY.iter_unpack(data):
            if relative <= last_offset or position <= last_position or position >= log_size:
                raise CorruptIndex(f"{self.path}: entry ({relative}, {position}) out of order")
            last_offset, last_position = relative, position
            self.offsets.append(self.base_offset + relative)
            self.positions.append(position)

    def reset(self) -> None:
        """Empties the index (before a rebuild)."""
        self._truncate_entries(0)
        self.offsets = array("q")
        self.positions = array("q")

    def append(self, offset: int, position: int) -> None:
        if self.offsets and offset <= self.offsets[-1]:
            return
        self._write_entry(len(self.offsets), ENTRY.pack(offset - self.base_offset, position))
        self.offsets.append(offset)
        self.positions.append(position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """The last entry at or before ``offset`` as ``(offset, position)``; the
        segment start if none."""
        i = bisect.bisect_right(self.offsets, offset)
        if i == 0:
            return self.base_offset, 0
        return self.offsets[i - 1], self.positions[i - 1]

    def truncate_to_position(self, position: int) -> None:
        """Drops entries pointing at or past ``position`` of the log."""
        i = bisect.bisect_left(self.positions, position)
        del self.offsets[i:]
        del self.positions[i:]
        self._truncate_entries(i)
