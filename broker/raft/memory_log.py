"""A ``ReplicatedLog`` held in memory: the simulation's log, and the in-memory index
that ``FileLog`` persists underneath.

Subclasses make it durable by overriding the ``_persist_*`` hooks, each called
*before* memory changes, so what a reader can see has always reached storage first.
"""

from __future__ import annotations

import bisect

from broker.raft.entries import EntryKind, LogEntry, OffsetAndEpoch, Snapshot


class MemoryLog:
    def __init__(self) -> None:
        self._entries: list[LogEntry] = []
        self._start = 0
        self._snapshot: Snapshot | None = None
        # (epoch, first offset) for each epoch present in _entries, ascending.
        self._epoch_starts: list[tuple[int, int]] = []

    # -- positions ---------------------------------------------------------------------
    @property
    def start_offset(self) -> int:
        return self._start

    @property
    def end_offset(self) -> int:
        return self._start + len(self._entries)

    def last_fetched_epoch(self) -> int:
        if self._entries:
            return self._entries[-1].epoch
        return self._snapshot.snapshot_id.epoch if self._snapshot else 0

    def end_offset_and_epoch(self) -> OffsetAndEpoch:
        return OffsetAndEpoch(self.last_fetched_epoch(), self.end_offset)

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        starts = self._epoch_ranges()
        index = bisect.bisect_right([e for e, _ in starts], epoch) - 1
        if index < 0:
            return OffsetAndEpoch(0, self._start)
        found = starts[index][0]
        end = starts[index + 1][1] if index + 1 < len(starts) else self.end_offset
        return OffsetAndEpoch(found, end)

    def _epoch_ranges(self) -> list[tuple[int, int]]:
        """Epoch starts, with the snapshot's epoch first when the log does not continue it."""
        ranges = list(self._epoch_starts)
        if self._snapshot is not None:
            snap_epoch = self._snapshot.snapshot_id.epoch
            if not ranges or ranges[0][0] != snap_epoch:
                ranges.insert(0, (snap_epoch, self._start))
        return ranges

    # -- appends and reads ---------------------------------------------------------------
    def append_as_leader(self, data: list[bytes], epoch: int, kind: EntryKind) -> int:
        if epoch < self.last_fetched_epoch():
            raise ValueError(f"append at epoch {epoch} below the log's {self.last_fetched_epoch()}")
        first = self.end_offset
        self._append([LogEntry(first + i, epoch, d, kind) for i, d in enumerate(data)])
        return first

    def append_as_follower(self, entries: list[LogEntry]) -> None:
        if not entries:
            return
        if entries[0].offset != self.end_offset:
            raise ValueError(
                f"follower append at {entries[0].offset}, log ends at {self.end_offset}"
            )
        last_epoch = self.last_fetched_epoch()
        for expected, entry in enumerate(entries, start=self.end_offset):
            if entry.offset != expected or entry.epoch < last_epoch:
                raise ValueError(f"entries not dense or epochs decreasing at offset {entry.offset}")
            last_epoch = entry.epoch
        self._append(entries)

    def _append(self, entries: list[LogEntry]) -> None:
        if not entries:
            return
        self._persist_append(entries)
        self._remember(entries)

    def _remember(self, entries: list[LogEntry]) -> None:
        for entry in entries:
            if not self._epoch_starts or self._epoch_starts[-1][0] != entry.epoch:
                self._epoch_starts.append((entry.epoch, entry.offset))
        self._entries.extend(entries)

    def read(self, start: int, max_entries: int) -> list[LogEntry]:
        if start < self._start or start > self.end_offset:
            raise ValueError(f"read at {start} outside [{self._start}, {self.end_offset}]")
        first = start - self._start
        return self._entries[first : first + max_entries]

    def truncate_to(self, offset: int) -> None:
        if offset >= self.end_offset:
            return
        if offset < self._start:
            raise ValueError(f"cannot truncate to {offset} below the log start {self._start}")
        self._persist_truncate(offset)
        del self._entries[offset - self._start :]
        self._epoch_starts = [(e, s) for e, s in self._epoch_starts if s < offset]

    def flush(self) -> None:
        """Appends are durable when they return; nothing is ever left to flush."""

    # -- snapshots -----------------------------------------------------------------------
    def create_snapshot(self, snapshot: Snapshot) -> None:
        sid = snapshot.snapshot_id
        if not self._start <= sid.offset <= self.end_offset:
            raise ValueError(f"snapshot at {sid.offset} outside [{self._start}, {self.end_offset}]")
        if (
            sid.offset > self._start
            and self._entries[sid.offset - 1 - self._start].epoch != sid.epoch
        ):
            raise ValueError(
                f"snapshot epoch {sid.epoch} does not match the entry before {sid.offset}"
            )
        self._persist_snapshot(snapshot)
        self._snapshot = snapshot

    def latest_snapshot(self) -> Snapshot | None:
        return self._snapshot

    def delete_before_snapshot(self) -> None:
        if self._snapshot is None or self._snapshot.snapshot_id.offset <= self._start:
            return
        new_start = self._snapshot.snapshot_id.offset
        self._persist_prefix_deleted(new_start)
        del self._entries[: new_start - self._start]
        self._start = new_start
        self._epoch_starts = [(e, max(s, new_start)) for e, s in self._epoch_starts]
        self._epoch_starts = [
            (e, s)
            for i, (e, s) in enumerate(self._epoch_starts)
            if i + 1 == len(self._epoch_starts) or self._epoch_starts[i + 1][1] > s
        ]
        if not self._entries:
            self._epoch_starts = []

    def install_snapshot(self, snapshot: Snapshot) -> None:
        self._persist_snapshot(snapshot)
        self._persist_truncate(self._start)
        self._snapshot = snapshot
        self._entries = []
        self._epoch_starts = []
        self._start = snapshot.snapshot_id.offset
        self._persist_prefix_deleted(self._start)

    # -- persistence hooks (no-ops in memory) --------------------------------------------
    def _persist_append(self, entries: list[LogEntry]) -> None:
        """Write and fsync ``entries`` before they become visible."""

    def _persist_truncate(self, offset: int) -> None:
        """Drop stored entries at or after ``offset``."""

    def _persist_snapshot(self, snapshot: Snapshot) -> None:
        """Store ``snapshot`` atomically."""

    def _persist_prefix_deleted(self, start: int) -> None:
        """Storage below ``start`` may now be released."""
