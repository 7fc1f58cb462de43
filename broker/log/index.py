"""The sparse offset index of one segment (Kafka's ``OffsetIndex``).

Entries are 8 bytes, ``(offset - base_offset, position)`` as big-endian int32s,
added every ``index.interval.bytes`` of log. It is kept in memory for lookups
and mirrored to the ``.index`` file; being derived data, a missing or corrupt
file is rebuilt from the log instead of trusted.
"""

from __future__ import annotations

import bisect
import os
import struct
from array import array
from pathlib import Path

from broker.log.ledger import FsyncLedger

ENTRY = struct.Struct(">ii")


class CorruptIndex(ValueError):
    pass


class OffsetIndex:
    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.offsets = array("q")
        self.positions = array("q")
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._dirty = False  # changed since the last fsync

    def load(self, log_size: int) -> None:
        """Reads the file; raises ``CorruptIndex`` if it cannot describe a log of ``log_size``."""
        data = os.pread(self._fd, os.fstat(self._fd).st_size, 0)
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
        os.ftruncate(self._fd, 0)
        self._dirty = True
        self.offsets = array("q")
        self.positions = array("q")

    def append(self, offset: int, position: int) -> None:
        if self.offsets and offset <= self.offsets[-1]:
            return
        os.pwrite(
            self._fd,
            ENTRY.pack(offset - self.base_offset, position),
            len(self.offsets) * ENTRY.size,
        )
        self.offsets.append(offset)
        self.positions.append(position)
        self._dirty = True

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
        os.ftruncate(self._fd, i * ENTRY.size)
        self._dirty = True

    def flush(self, ledger: FsyncLedger) -> None:
        if self._dirty:
            ledger.fsync_fd(self._fd, self.path)
            self._dirty = False

    def close(self) -> None:
        os.close(self._fd)
