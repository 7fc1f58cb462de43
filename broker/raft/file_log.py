"""The metadata log on disk: segments of length-prefixed, CRC-checked entries, fsynced
on every append, and snapshots written atomically beside them.

Layout of a log directory::

    00000000000000000000.log            segment named by its first offset
    snapshots/00000000000000000120-0000000003.snapshot    (offset, epoch)

Entry frame: ``u32 length | u32 crc32(body) | body``, body = ``i64 offset | i32 epoch
| u8 kind | data``. A crash can only tear the last frame of the last segment (the
append was never acknowledged), so recovery cuts that tail; damage anywhere else is
reported as ``LogCorruptError`` naming the file and byte position.
"""

from __future__ import annotations

import itertools
import logging
import os
import struct
import zlib
from pathlib import Path

from broker.log.ledger import FsyncLedger, fsync_dir, write_atomically
from broker.raft.entries import EntryKind, LogEntry, OffsetAndEpoch, Snapshot
from broker.raft.memory_log import MemoryLog
from broker.raft.protocols import LogCorruptError

log = logging.getLogger(__name__)

_HEADER = struct.Struct(">II")
_BODY = struct.Struct(">qiB")
_SNAPSHOT_SUFFIX = ".snapshot"


def encode_entry(entry: LogEntry) -> bytes:
    body = _BODY.pack(entry.offset, entry.epoch, int(entry.kind)) + entry.data
    return _HEADER.pack(len(body), zlib.crc32(body)) + body


class FileLog(MemoryLog):
    """With a ``ledger``, every fsync is recorded there, so a power-loss fault keeps
    exactly what Raft made durable (votes and entries it acknowledged)."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        segment_bytes: int = 1 << 20,
        ledger: FsyncLedger | None = None,
    ) -> None:
        super().__init__()
        self.directory = Path(directory)
        self.segment_bytes = segment_bytes
        self.ledger = ledger
        self._snapshot_dir = self.directory / "snapshots"
        self._snapshot_dir.mkdir(parents=True, exist_ok=True)
        # segment base offset -> file size; and for each entry, (segment base, position).
        self._segments: dict[int, int] = {}
        self._positions: list[tuple[int, int]] = []
        self._recover()

    # -- recovery ------------------------------------------------------------------------
    def _recover(self) -> None:
        self._load_latest_snapshot()
        bases = sorted(int(p.stem) for p in self.directory.glob("*.log"))
        for i, base in enumerate(bases):
            self._recover_segment(base, is_last=i == len(bases) - 1)

    def _load_latest_snapshot(self) -> None:
        for path in sorted(self._snapshot_dir.glob("*" + _SNAPSHOT_SUFFIX), reverse=True):
            raw = path.read_bytes()
            if len(raw) < 4 or zlib.crc32(raw[4:]) != struct.unpack(">I", raw[:4])[0]:
                log.warning("ignoring damaged snapshot %s", path)
                continue
            offset, epoch = (int(part) for part in path.stem.split("-"))
            self._snapshot = Snapshot(OffsetAndEpoch(epoch, offset), raw[4:])
            self._start = offset
            return

    def _recover_segment(self, base: int, is_last: bool) -> None:
        path = self._segment_path(base)
        raw = path.read_bytes()
        position = 0
        while position < len(raw):
            entry, size = self._decode_at(raw, position)
            if entry is None:
                if not is_last:
                    raise LogCorruptError(f"{path}: damaged entry at byte {position}")
                log.warning("%s: truncating torn tail at byte %d", path, position)
                with open(path, "r+b") as f:
                    f.truncate(position)
                    self._fsync(f.fileno(), path)
                break
            self._adopt(entry, base, position, path)
            position += size
        self._segments[base] = position

    def _adopt(self, entry: LogEntry, base: int, position: int, path: Path) -> None:
        if entry.offset < self._start:
            return
        if entry.offset != self.end_offset or entry.epoch < self.last_fetched_epoch():
            raise LogCorruptError(
                f"{path}: entry at byte {position} has offset {entry.offset} epoch "
                f"{entry.epoch}, expected offset {self.end_offset}"
            )
        self._remember([entry])
        self._positions.append((base, position))

    @staticmethod
    def _decode_at(raw: bytes, position: int) -> tuple[LogEntry | None, int]:
        if position + _HEADER.size > len(raw):
            return None, 0
        length, crc = _HEADER.unpack_from(raw, position)
        body = raw[position + _HEADER.size : position + _HEADER.size + length]
        if length < _BODY.size or len(body) != length or zlib.crc32(body) != crc:
            return None, 0
        offset, epoch, kind = _BODY.unpack_from(body)
        try:
            entry_kind = EntryKind(kind)
        except ValueError:
            return None, 0
        return LogEntry(offset, epoch, body[_BODY.size :], entry_kind), _HEADER.size + length

    # -- persistence hooks ---------------------------------------------------------------
    def _fsync(self, fd: int, path: Path) -> None:
        if self.ledger is not None:
            self.ledger.fsync_fd(fd, path)
        else:
            os.fsync(fd)

    def _segment_path(self, base: int) -> Path:
        return self.directory / f"{base:020d}.log"

    def _persist_append(self, entries: list[LogEntry]) -> None:
        base = max(self._segments) if self._segments else None
        if base is None or self._segments[base] >= self.segment_bytes:
            base = entries[0].offset
            self._segments[base] = 0
            self._segment_path(base).touch()
            fsync_dir(self.directory)
        frames = [encode_entry(e) for e in entries]
        position = self._segments[base]
        with open(self._segment_path(base), "ab") as f:
            f.write(b"".join(frames))
            f.flush()
            self._fsync(f.fileno(), self._segment_path(base))
        for frame in frames:
            self._positions.append((base, position))
            position += len(frame)
        self._segments[base] = position

    def _persist_truncate(self, offset: int) -> None:
        keep = offset - self._start
        if keep < len(self._positions):
            cut_base, cut_position = self._positions[keep]
        else:
            return
        for base in [b for b in self._segments if b > cut_base]:
            self._segment_path(base).unlink()
            del self._segments[base]
        with open(self._segment_path(cut_base), "r+b") as f:
            f.truncate(cut_position)
            self._fsync(f.fileno(), self._segment_path(cut_base))
        self._segments[cut_base] = cut_position
        del self._positions[keep:]

    def _persist_snapshot(self, snapshot: Snapshot) -> None:
        sid = snapshot.snapshot_id
        name = f"{sid.offset:020d}-{sid.epoch:010d}{_SNAPSHOT_SUFFIX}"
        payload = struct.pack(">I", zlib.crc32(snapshot.data)) + snapshot.data
        if self.ledger is not None:
            self.ledger.write_atomically(self._snapshot_dir / name, payload)
        else:
            write_atomically(self._snapshot_dir / name, payload)
        for old in self._snapshot_dir.glob("*" + _SNAPSHOT_SUFFIX):
            if old.name != name:
                old.unlink()

    def _persist_prefix_deleted(self, start: int) -> None:
        """Delete whole segments that end at or before ``start``."""
        bases = sorted(self._segments)
        for base, following in itertools.pairwise(bases):
            if following <= start:
                self._segment_path(base).unlink()
                del self._segments[base]
        drop = max(0, min(start - self._start, len(self._positions)))
        del self._positions[:drop]
        if not self._positions and self._segments and start >= self.end_offset:
            for base in list(self._segments):
                self._segment_path(base).unlink()
                del self._segments[base]
