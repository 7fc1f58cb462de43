"""The election state (epoch, vote, leader) in a small JSON file, replaced atomically
and fsynced so that a vote survives any crash."""

from __future__ import annotations

import json
import os
from pathlib import Path

from broker.log.ledger import FsyncLedger, write_atomically
from broker.raft.protocols import ElectionState


class QuorumStateCorruptError(Exception):
    """The quorum-state file exists but cannot be read as election state."""


class FileQuorumStateStore:
    """With a ``ledger``, each durable write is recorded there (see ``FileLog``)."""

    def __init__(self, path: str | os.PathLike[str], ledger: FsyncLedger | None = None) -> None:
        self.path = Path(path)
        self.ledger = ledger

    def read(self) -> ElectionState | None:
        if not self.path.exists():
            return None
        try:
            raw = json.loads(self.path.read_text())
            return ElectionState(
                epoch=int(raw["epoch"]),
                voted_for=None if raw["voted_for"] is None else int(raw["voted_for"]),
                leader_id=None if raw["leader_id"] is None else int(raw["leader_id"]),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise QuorumStateCorruptError(f"{self.path}: not a quorum state file ({exc})") from exc

    def write(self, state: ElectionState) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        record = {"epoch": state.epoch, "voted_for": state.voted_for, "leader_id": state.leader_id}
        data = json.dumps(record).encode()
        if self.ledger is not None:
            self.ledger.write_atomically(self.path, data)
        else:
            write_atomically(self.path, data)


class MemoryQuorumStateStore:
    """Election state kept in an object that outlives a simulated node's crash."""

    def __init__(self) -> None:
        self.state: ElectionState | None = None

    def read(self) -> ElectionState | None:
        return self.state

    def write(self, state: ElectionState) -> None:
        self.state = state
