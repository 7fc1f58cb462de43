"""The ``replication-offset-checkpoint`` of a data directory (Kafka's high-watermark
checkpoint): ``topic partition offset`` per hosted partition, written periodically
and at clean shutdown, read at start.

A restarted replica starts from its checkpointed HW instead of its log end: a
log end past the HW holds records no consumer may see yet (they were never
committed, and a new leader may cut them), so starting the HW there would let a
replica that becomes leader serve them at once."""

from __future__ import annotations

from pathlib import Path

from broker.log.checkpoint_file import OffsetCheckpointFile
from broker.log.ledger import FsyncLedger

CHECKPOINT_NAME = "replication-offset-checkpoint"


class HighWatermarkCheckpoint(OffsetCheckpointFile):
    def __init__(self, data_dir: Path, ledger: FsyncLedger) -> None:
        super().__init__(
            data_dir / CHECKPOINT_NAME, ledger, "every replica starts from high watermark 0"
        )
