"""The ``replication-offset-checkpoint`` of a data directory (Kafka's high-watermark
checkpoint): ``topic partition offset`` per hosted partition, written periodically
and at clean shutdown, read at start.

A restarted replica starts from its checkpointed HW instead of its log end: a
log end past the HW holds records no consumer may see yet (they were never
committed, and a new leader may cut them), so starting the HW there would let a
replica that becomes leader serve them at once."""

from __future__ import annotations

import logging
from pathlib import Path

from broker.log.checkpoint_file import (
    CheckpointError,
    int_field,
    read_checkpoint,
    write_checkpoint,
)
from broker.log.ledger import FsyncLedger

log = logging.getLogger(__name__)
CHECKPOINT_NAME = "replication-offset-checkpoint"
TopicPartition = tuple[str, int]


class HighWatermarkCheckpoint:
    def __init__(self, data_dir: Path, ledger: FsyncLedger) -> None:
        self.path = data_dir / CHECKPOINT_NAME
        self.ledger = ledger
        self.written: dict[TopicPartition, int] = {}

    def read(self) -> dict[TopicPartition, int]:
        """The checkpointed HWs; empty (with a warning) for a missing or malformed
        file, so every replica starts from HW 0 and learns the HW from its leader."""
        try:
            rows = read_checkpoint(self.path, 3) or []
            found = {(t, int_field(self.path, p)): int_field(self.path, o) for t, p, o in rows}
        except CheckpointError as e:
            log.warning("%s; every replica starts from high watermark 0", e)
            found = {}
        self.written = dict(found)
        return found

    def write(self, high_watermarks: dict[TopicPartition, int]) -> None:
        """Rewrites the file when any HW moved since the last write."""
        if high_watermarks == self.written:
            return
        entries = [(t, p, hw) for (t, p), hw in sorted(high_watermarks.items())]
        write_checkpoint(self.path, entries, self.ledger)
        self.written = dict(high_watermarks)
