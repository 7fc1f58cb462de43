"""The election state (epoch, vote, leader) in a small JSON file, replaced atomically
and fsynced so that a vote survives any crash."""

from __future__ import annotations

import json
import os
from pathlib import Path

from broker.raft.file_log import write_atomically
from broker.raft.protocols import ElectionState


class QuorumStateCorruptError(Exception):
    """The quorum-state file exists but cannot be read as election state."""


class FileQuorumStateStore:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

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
        write_atomically(self.path, json.dumps(record).encode())


class MemoryQuorumStateStore:
    """Election state kept in an object that outlives a simulated node's crash."""

    def __init__(self) -> None:
        self.state: ElectionState | None = None

    def read(self) -> ElectionState | None:
        return self.state

    def write(self, state: ElectionState) -> None:
        self.state = state
