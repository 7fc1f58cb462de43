"""The on-disk run directory: ``store/<test>/<YYYYMMDDTHHMMSS>/``.

A run is saved in phases so that whatever stops it, what happened so far is
on disk (Jepsen's ``store`` save-0/1/2): ``test.json`` (the resolved spec and
seed) before anything runs; ``history.jsonl`` one line per op *as it
happens*, each written with a single ``write(2)`` on an ``O_APPEND`` file, so
a run killed at any point leaves every completed line intact and at most a
torn last line, which the history reader drops; then ``history.parquet``,
``nodes/<node>/`` and ``results.json`` after the run. ``store/latest`` and
``store/<test>/latest`` point to the newest run.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

HISTORY = "history.jsonl"
HISTORY_PARQUET = "history.parquet"
TEST_JSON = "test.json"
RESULTS_JSON = "results.json"
FAULTS_YML = "faults.yml"
LATEST = "latest"

_JSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE


class HistoryWriter:
    """Appends ops to ``history.jsonl``, one ``write`` per op (no user-space
    buffer to lose). Not thread-safe: the interpreter is its only writer."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.count = 0

    def append(self, op: dict[str, Any]) -> None:
        if self._fd is None:
            raise ValueError(f"{self.path} is closed")
        os.write(self._fd, orjson.dumps(op, option=_JSON_OPTIONS, default=str))
        self.count += 1

    def close(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _point(link: Path, target: str) -> None:
    """Makes ``link`` a symlink to ``target``, replacing any old one atomically."""
    tmp = link.with_name(f".{link.name}.{os.getpid()}")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    os.symlink(target, tmp)
    os.replace(tmp, link)


def safe_name(name: str) -> str:
    """A test name usable as one directory name."""
    cleaned = "".join(c if c.isalnum() or c in "-_.+" else "-" for c in name).strip(".")
    return cleaned or "test"


class RunDir:
    """One run's directory and the files in it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, root: Path | str, test_name: str, now: datetime | None = None) -> RunDir:
        """A new, empty run directory, now ``latest``; a second run in the
        same second gets a ``-2``, ``-3``... suffix."""
        root = Path(root)
        test_dir = root / safe_name(test_name)
        test_dir.mkdir(parents=True, exist_ok=True)
        stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S")
        path, n = test_dir / stamp, 1
        while True:
            try:
                path.mkdir()
                break
            except FileExistsError:
                n += 1
                path = test_dir / f"{stamp}-{n}"
        _point(test_dir / LATEST, path.name)
        _point(root / LATEST, f"{test_dir.name}/{path.name}")
        return cls(path)

    @property
    def history_path(self) -> Path:
        return self.path / HISTORY

    def history_writer(self) -> HistoryWriter:
        return HistoryWriter(self.history_path)

    def save_json(self, name: str, data: Any) -> Path:
        """Writes a JSON file atomically (write to a temporary name, then rename)."""
        target = self.path / name
        tmp = target.with_name(f".{name}.tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
        os.replace(tmp, target)
        return target

    def save_test(self, spec: dict[str, Any]) -> Path:
        return self.save_json(TEST_JSON, spec)

    def save_results(self, results: dict[str, Any]) -> Path:
        return self.save_json(RESULTS_JSON, results)

    def write_parquet(self) -> Path:
        """``history.parquet`` from ``history.jsonl`` (the flat table)."""
        from history import read_flat
        from history.parquet import write_parquet

        target = self.path / HISTORY_PARQUET
        write_parquet(read_flat(self.history_path, "jsonl"), str(target))
        return target

    def node_dir(self, node: str) -> Path:
        d = self.path / "nodes" / safe_name(node)
        d.mkdir(parents=True, exist_ok=True)
        return d
