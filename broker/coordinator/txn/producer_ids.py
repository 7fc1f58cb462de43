"""Producer-id allocation that never hands out an id twice, even across crashes.

Ids are reserved in blocks: the end of the reserved range is written (fsynced,
then renamed into place) before any id of the block is given out, so after a
crash the broker resumes past everything it might have handed out. Kafka keeps
the same block in its metadata log (``ProducerIdsRecord``); a replicated
controller can take over by replacing this class.
"""

from __future__ import annotations

import os
from pathlib import Path

BLOCK_SIZE = 1000
FILE_NAME = "producer-id-block"


class ProducerIdStateError(ValueError):
    """The reservation file exists but cannot be read."""


class ProducerIdManager:
    def __init__(self, directory: Path, block_size: int = BLOCK_SIZE) -> None:
        self._path = directory / FILE_NAME
        self._block_size = block_size
        self._next = self._read_reserved_end()
        self._block_end = self._next

    def _read_reserved_end(self) -> int:
        try:
            text = self._path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            return 0
        try:
            value = int(text)
        except ValueError:
            raise ProducerIdStateError(f"{self._path}: not a producer id: {text[:40]!r}") from None
        if value < 0:
            raise ProducerIdStateError(f"{self._path}: negative producer id {value}")
        return value

    def _reserve(self, end: int) -> None:
        tmp = self._path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, f"{end}\n".encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self._path)
        dir_fd = os.open(self._path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        self._block_end = end

    def next_id(self) -> int:
        if self._next >= self._block_end:
            self._reserve(self._next + self._block_size)
        pid = self._next
        self._next += 1
        return pid
