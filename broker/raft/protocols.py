"""The three seams the Raft client stands on, as in KRaft (``ReplicatedLog``,
``NetworkChannel``, ``QuorumStateStore``).

The client depends only on these protocols, so the same consensus code runs over
files and real sockets in a broker, and over memory with a virtual clock in the
seeded simulation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from broker.raft.entries import EntryKind, LogEntry, OffsetAndEpoch, Snapshot
from broker.raft.messages import Envelope


class LogCorruptError(Exception):
    """A log file is damaged somewhere other than its tail (a torn tail is repaired)."""


class ReplicatedLog(Protocol):
    """The single-partition metadata log. Entries are dense from ``start_offset`` (the
    latest snapshot's offset, or 0) to ``end_offset`` (exclusive)."""

    @property
    def start_offset(self) -> int: ...

    @property
    def end_offset(self) -> int: ...

    def last_fetched_epoch(self) -> int:
        """Epoch of the last entry (or of the snapshot at the log start; 0 when empty)."""
        ...

    def end_offset_and_epoch(self) -> OffsetAndEpoch: ...

    def append_as_leader(self, data: list[bytes], epoch: int, kind: EntryKind) -> int:
        """Append entries stamped with ``epoch``, fsynced; return the first offset."""
        ...

    def append_as_follower(self, entries: list[LogEntry]) -> None:
        """Append entries copied from the leader; they must start at ``end_offset``."""
        ...

    def read(self, start: int, max_entries: int) -> list[LogEntry]: ...

    def truncate_to(self, offset: int) -> None:
        """Drop every entry at or after ``offset`` (only followers ever do this)."""
        ...

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """The largest epoch <= ``epoch`` in the log and the offset where it ends."""
        ...

    def flush(self) -> None: ...

    def create_snapshot(self, snapshot: Snapshot) -> None:
        """Store a snapshot of committed state, durably."""
        ...

    def latest_snapshot(self) -> Snapshot | None: ...

    def delete_before_snapshot(self) -> None:
        """Drop the log prefix the latest snapshot covers (log start = its offset)."""
        ...

    def install_snapshot(self, snapshot: Snapshot) -> None:
        """Store a snapshot fetched from the leader and replace the whole log with it."""
        ...


class NetworkChannel(Protocol):
    """Asynchronous messaging: ``send`` never blocks and may lose the message; replies
    come back later through the client's ``handle``."""

    def send(self, envelope: Envelope) -> None: ...


@dataclass(frozen=True, slots=True)
class ElectionState:
    """What must survive a crash so that a voter never votes twice in one epoch."""

    epoch: int
    voted_for: int | None
    leader_id: int | None


class QuorumStateStore(Protocol):
    def read(self) -> ElectionState | None: ...

    def write(self, state: ElectionState) -> None:
        """Persist durably before returning (the vote must not be forgotten)."""
        ...


class Clock(Protocol):
    def now_ms(self) -> int: ...
