"""One ``__transaction_state`` partition: the transactional ids it owns."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from broker.coordinator.txn import records
from broker.coordinator.txn.state import TransactionMetadata, TxnSnapshot


class TxnShard:
    """Replays transaction-log records (last value per id wins; a tombstone
    removes the id) and owns the background work for its ids."""

    def __init__(self, partition: int, on_activate: Callable[[TxnShard], None]) -> None:
        self.partition = partition
        self.transactions: dict[str, TransactionMetadata] = {}
        self._on_activate = on_activate
        self._tasks: set[asyncio.Task[None]] = set()
        self.active = False

    def replay(
        self, key: bytes, value: bytes | None, producer_id: int, producer_epoch: int
    ) -> None:
        transactional_id = records.decode_key(key)
        if value is None:
            self.transactions.pop(transactional_id, None)
            return
        snapshot = TxnSnapshot.from_record(records.decode_value(value))
        existing = self.transactions.get(transactional_id)
        if existing is None:
            self.transactions[transactional_id] = TransactionMetadata(transactional_id, snapshot)
        else:
            if existing.current.producer_epoch != snapshot.producer_epoch:
                existing.last_producer_epoch = existing.current.producer_epoch
            existing.current = snapshot

    def replay_marker(self, producer_id: int, producer_epoch: int, commit: bool) -> None:
        """The transaction log never holds markers."""

    def activate(self) -> None:
        self.active = True
        self._on_activate(self)

    def deactivate(self) -> None:
        self.active = False
        for task in self._tasks:
            task.cancel()
        self._tasks.clear()

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Runs background work that dies with the shard (markers, completions)."""
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
