"""The fsync ledger: how far each data file is known to be on disk.

After every fsync the broker appends ``<path relative to the data dir> <size>``
to ``<data-dir>/fsync.ledger``. A power-loss fault later truncates each file to
its last recorded size (files never recorded to zero), so the ledger must be
written only *after* the fsync it describes has returned.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

LEDGER_NAME = "fsync.ledger"


class FsyncLedger:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir.resolve()
        self._fd = os.open(
            self.data_dir / LEDGER_NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644
        )
        self._lock = threading.Lock()
        self._last: dict[str, int] = {}  # last recorded size per path, to skip repeats

    def record(self, path: Path, size: int) -> None:
        """Notes that ``path`` is durable up to ``size`` bytes."""
        relative = path.resolve().relative_to(self.data_dir).as_posix()
        with self._lock:
            if self._last.get(relative) != size:
                os.write(self._fd, f"{relative} {size}\n".encode())
                self._last[relative] = size

    def fsync_fd(self, fd: int, path: Path) -> None:
        """fsyncs an open file and records its current size."""
        os.fsync(fd)
        self.record(path, os.fstat(fd).st_size)

    def fsync_path(self, path: Path) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            self.fsync_fd(fd, path)
        finally:
            os.close(fd)

    def write_atomically(self, path: Path, data: bytes) -> None:
        """Replaces ``path`` with ``data`` durably, then records it."""
        write_atomically(path, data)
        self.record(path, len(data))

    def close(self) -> None:
        os.close(self._fd)


def write_atomically(path: Path, data: bytes) -> None:
    """Replaces ``path`` with ``data`` durably: temp file, fsync, rename, fsync dir."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    """Makes a directory's entries (created, renamed files) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_ledger(data_dir: Path) -> dict[str, int]:
    """The last recorded size of every file in a ledger (for faults and tests)."""
    sizes: dict[str, int] = {}
    path = data_dir / LEDGER_NAME
    if path.exists():
        for line in path.read_text().splitlines():
            name, _, size = line.rpartition(" ")
            if name and size.isdigit():
                sizes[name] = int(size)
    return sizes
