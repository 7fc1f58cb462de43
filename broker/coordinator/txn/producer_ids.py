"""Producer-id allocation that never hands out an id twice, even across crashes.

Ids are reserved in blocks: the end of the reserved range is written durably
(through the broker's fsync ledger, so a simulated power loss keeps it) before
any id of the block is given out, so after a crash the broker resumes past
everything it might have handed out. Kafka keeps the same block in its
metadata log (``ProducerIdsRecord``); a node of a cluster draws its blocks from
the controller instead (:mod:`broker.coordinator.txn.producer_id_blocks`).
"""

from __future__ import annotations

from broker.log.ledger import FsyncLedger

BLOCK_SIZE = 1000
FILE_NAME = "producer-id-block"


class ProducerIdStateError(ValueError):
    """The reservation file exists but cannot be read."""


class ProducerIdManager:
    def __init__(self, ledger: FsyncLedger, block_size: int = BLOCK_SIZE) -> None:
        self._ledger = ledger
        self._path = ledger.data_dir / FILE_NAME
        self._block_size = block_size
        self._next = self._read_reserved_end()
        self._block_end = self._next

    def _read_reserved_end(self) -> int:
        try:
            text = self._path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            return 0
        except (OSError, UnicodeDecodeError) as exc:
            raise ProducerIdStateError(f"{self._path}: unreadable: {exc}") from None
        if not text.isdigit():
            raise ProducerIdStateError(f"{self._path}: not a producer id: {text[:40]!r}")
        return int(text)

    async def next_id(self) -> int:
        if self._next >= self._block_end:
            end = self._next + self._block_size
            self._ledger.write_atomically(self._path, f"{end}\n".encode("ascii"))
            self._block_end = end
        pid = self._next
        self._next += 1
        return pid
