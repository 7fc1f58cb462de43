"""The leader-epoch cache of one partition (KIP-101, Kafka's
``LeaderEpochFileCache``): the offset at which each leader epoch began, persisted
as ``leader-epoch-checkpoint`` beside the log and rewritten on every change.

It answers OffsetForLeaderEpoch (where an epoch ends) without scanning the log,
and remembers an epoch a leader took even before any batch was written in it,
so a follower that wrote in an epoch the new leader never saw is cut back to
where the logs still agree (KIP-279)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from broker.log.checkpoint_file import int_field, read_checkpoint, write_checkpoint
from broker.log.ledger import FsyncLedger

log = logging.getLogger(__name__)
CHECKPOINT_NAME = "leader-epoch-checkpoint"
UNDEFINED = -1


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


class LeaderEpochCache:
    def __init__(self, directory: Path, ledger: FsyncLedger) -> None:
        self.path = directory / CHECKPOINT_NAME
        self.ledger = ledger
        self.entries: list[EpochEntry] = []

    # -- loading -----------------------------------------------------------------------
    def load(self) -> bool:
        """Reads the checkpoint; False if there is none (an older data directory).
        Raises ``CheckpointError`` for a malformed file."""
        rows = read_checkpoint(self.path, 2)
        if rows is None:
            return False
        entries = [EpochEntry(int_field(self.path, e), int_field(self.path, o)) for e, o in rows]
        self.entries = []
        for entry in entries:
            self._add(entry)
        return True

    # -- updates -------------------------------------------------------------------------
    def assign(self, epoch: int, start_offset: int) -> None:
        """Epoch ``epoch`` starts at ``start_offset`` (a new leader, or the first batch of
        an epoch): entries it contradicts are dropped, and the file rewritten."""
        if epoch < 0:
            return
        latest = self.entries[-1] if self.entries else None
        if latest is not None and latest.epoch == epoch and latest.start_offset <= start_offset:
            return
        self._add(EpochEntry(epoch, start_offset))
        self._flush()

    def _add(self, entry: EpochEntry) -> None:
        kept = [
            e for e in self.entries if e.epoch < entry.epoch and e.start_offset < entry.start_offset
        ]
        if len(kept) != len(self.entries):
            log.info(
                "%s: epoch %s drops %s", self.path.parent.name, entry, self.entries[len(kept) :]
            )
        self.entries = [*kept, entry]

    def truncate_from_end(self, end_offset: int) -> None:
        """The log was cut to ``end_offset``: epochs starting there or later are gone."""
        kept = [e for e in self.entries if e.start_offset < end_offset]
        if len(kept) != len(self.entries):
            self.entries = kept
            self._flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at ``start_offset``: the epoch holding it starts there."""
        if not self.entries or self.entries[0].start_offset >= start_offset:
            return
        first = 0
        while (
            first + 1 < len(self.entries) and self.entries[first + 1].start_offset <= start_offset
        ):
            first += 1
        self.entries = [
            EpochEntry(self.entries[first].epoch, start_offset),
            *self.entries[first + 1 :],
        ]
        self._flush()

    def _flush(self) -> None:
        entries = [(e.epoch, e.start_offset) for e in self.entries]
        write_checkpoint(self.path, entries, self.ledger)

    # -- queries -------------------------------------------------------------------------
    @property
    def latest_epoch(self) -> int:
        return self.entries[-1].epoch if self.entries else UNDEFINED

    def end_offset_for(self, requested: int, log_end_offset: int) -> tuple[int, int]:
        """KIP-101/279: the largest epoch <= ``requested`` and the offset where it ends
        (the start of the next epoch, or the log end for the latest); for an epoch older
        than every entry, ``requested`` and the first entry's start; (-1, -1) when the
        cache is empty or ``requested`` is newer than every entry."""
        if requested < 0 or not self.entries:
            return UNDEFINED, UNDEFINED
        if requested == self.entries[-1].epoch:
            return requested, log_end_offset
        floor = None
        for entry in self.entries:
            if entry.epoch > requested:
                return (requested if floor is None else floor.epoch), entry.start_offset
            floor = entry
        return UNDEFINED, UNDEFINED
