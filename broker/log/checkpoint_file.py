"""Kafka's text checkpoint format, shared by ``leader-epoch-checkpoint``,
``replication-offset-checkpoint`` and ``log-start-offset-checkpoint``: a version
line (0), a count line, then one entry per line of space-separated fields.
Written atomically (temp file, fsync, rename) so a crash leaves either the old or
the new file, never a torn one."""

from __future__ import annotations

import logging
from pathlib import Path

from broker.log.ledger import FsyncLedger

log = logging.getLogger(__name__)
VERSION = 0
TopicPartition = tuple[str, int]


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read; the message names the file and line."""


def write_checkpoint(path: Path, entries: list[tuple[object, ...]], ledger: FsyncLedger) -> None:
    lines = [str(VERSION), str(len(entries)), *(" ".join(map(str, e)) for e in entries)]
    ledger.write_atomically(path, ("\n".join(lines) + "\n").encode())


def read_checkpoint(path: Path, fields: int) -> list[list[str]] | None:
    """The entries of ``path`` (each ``fields`` strings), or None if it does not
    exist; raises ``CheckpointError`` for a malformed file."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{path}: unreadable: {e}") from None
    if len(lines) < 2 or lines[0].strip() != str(VERSION):
        raise CheckpointError(f"{path}:1: expected version {VERSION}")
    if not lines[1].strip().isdigit() or int(lines[1]) != len(lines) - 2:
        raise CheckpointError(f"{path}:2: entry count does not match {len(lines) - 2} line(s)")
    entries = []
    for number, line in enumerate(lines[2:], start=3):
        parts = line.split()
        if len(parts) != fields:
            raise CheckpointError(f"{path}:{number}: expected {fields} fields, got {line!r}")
        entries.append(parts)
    return entries


def int_field(path: Path, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise CheckpointError(f"{path}: {text!r} is not an integer") from None


class OffsetCheckpointFile:
    """A data directory's ``topic partition offset`` file (Kafka's
    OffsetCheckpointFile): one offset per hosted partition, rewritten only when
    one moved."""

    def __init__(self, path: Path, ledger: FsyncLedger, fallback: str) -> None:
        """``fallback`` says, in the warning for a malformed file, what the broker
        does without it."""
        self.path = path
        self.ledger = ledger
        self.fallback = fallback
        self.written: dict[TopicPartition, int] = {}

    def read(self) -> dict[TopicPartition, int]:
        """The checkpointed offsets; empty (with a warning) for a missing or
        malformed file."""
        try:
            rows = read_checkpoint(self.path, 3) or []
            found = {(t, int_field(self.path, p)): int_field(self.path, o) for t, p, o in rows}
        except CheckpointError as e:
            log.warning("%s; %s", e, self.fallback)
            found = {}
        self.written = dict(found)
        return found

    def write(self, offsets: dict[TopicPartition, int]) -> None:
        """Rewrites the file when any offset moved since the last write."""
        if offsets == self.written:
            return
        entries = [(t, p, offset) for (t, p), offset in sorted(offsets.items())]
        write_checkpoint(self.path, entries, self.ledger)
        self.written = dict(offsets)
