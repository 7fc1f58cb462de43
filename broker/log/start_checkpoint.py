"""The ``log-start-offset-checkpoint`` of a data directory (Kafka's): ``topic
partition offset`` for each log whose start offset lies past its first segment's
base offset, as after a DeleteRecords that cut a segment in the middle. Written
every ``log.flush.start.offset.checkpoint.interval.ms`` and at clean shutdown,
read at start; a log whose whole segments below its start are gone needs no
entry, its first segment says where it starts."""

from __future__ import annotations

from pathlib import Path

from broker.log.checkpoint_file import OffsetCheckpointFile
from broker.log.ledger import FsyncLedger

CHECKPOINT_NAME = "log-start-offset-checkpoint"


class LogStartOffsetCheckpoint(OffsetCheckpointFile):
    def __init__(self, data_dir: Path, ledger: FsyncLedger) -> None:
        super().__init__(
            data_dir / CHECKPOINT_NAME,
            ledger,
            "every log starts at its first segment",
        )
