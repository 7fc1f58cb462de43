"""What the metadata log holds: entries, log positions and snapshots.

Plain data below both the messages that carry them and the seams that store
them (``protocols``), so neither has to import the other.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class EntryKind(enum.IntEnum):
    """Data entries carry state-machine records; LEADER_CHANGE is the control entry a
    new leader writes so that it can commit in its own epoch (Raft's current-epoch rule)."""

    DATA = 0
    LEADER_CHANGE = 1


@dataclass(frozen=True, slots=True)
class LogEntry:
    offset: int
    epoch: int
    data: bytes
    kind: EntryKind = EntryKind.DATA


@dataclass(frozen=True, slots=True, order=True)
class OffsetAndEpoch:
    """A log position: ``offset`` is exclusive (the end), ``epoch`` the epoch of the
    entry just before it. Ordering compares epoch first, as Raft's up-to-date rule does."""

    epoch: int
    offset: int


@dataclass(frozen=True, slots=True)
class Snapshot:
    """State up to ``snapshot_id.offset`` (exclusive), as opaque bytes of the state machine."""

    snapshot_id: OffsetAndEpoch
    data: bytes
