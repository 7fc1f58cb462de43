"""The transaction state machine (Kafka's ``TransactionMetadata``).

Each state lists the states it may be entered from; every change goes through
:meth:`TransactionMetadata.prepare`, which checks that table, so an illegal
transition is a bug caught at once rather than a corrupt transaction log.
A change is *prepared* (held as ``pending`` while its record is written to
``__transaction_state``) and only then *completed*; while one is pending, other
requests for the same transactional id get CONCURRENT_TRANSACTIONS.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Any

from kio.static.primitive import i8, i16, i32, i64

from broker.coordinator.txn.records import TransactionLogPartitions, TransactionLogValue

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_PRODUCER_EPOCH = 32767

TopicPartition = tuple[str, int]


class IllegalTransition(RuntimeError):
    """A transition the state table forbids: a coordinator bug, never client input."""


class TransactionState(enum.IntEnum):
    """The value is the ``transaction_status`` byte in the transaction log."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def valid_previous_states(self) -> frozenset[TransactionState]:
        return _VALID_PREVIOUS[self]

    @property
    def kafka_name(self) -> str:
        """The name DescribeTransactions and ListTransactions use (``PrepareCommit``)."""
        return "".join(word.capitalize() for word in self.name.split("_"))

    @property
    def is_prepare(self) -> bool:
        return self in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)

    @property
    def is_complete(self) -> bool:
        return self in (TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)


_S = TransactionState
_VALID_PREVIOUS: dict[TransactionState, frozenset[TransactionState]] = {
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    _S.PREPARE_ABORT: frozenset({_S.ONGOING, _S.PREPARE_EPOCH_FENCE}),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}


@dataclass(frozen=True, slots=True)
class TxnSnapshot:
    """One transactional id's state as one transaction-log record holds it."""

    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TransactionState
    partitions: frozenset[TopicPartition]
    start_ms: int
    last_update_ms: int

    def to_record(self) -> TransactionLogValue:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(self.partitions):
            by_topic.setdefault(topic, []).append(partition)
        return TransactionLogValue(
            producer_id=i64(self.producer_id),
            producer_epoch=i16(self.producer_epoch),
            transaction_timeout_ms=i32(self.timeout_ms),
            transaction_status=i8(int(self.state)),
            transaction_partitions=tuple(
                TransactionLogPartitions(topic=t, partition_ids=tuple(i32(p) for p in ps))
                for t, ps in by_topic.items()
            ),
            transaction_last_update_timestamp_ms=i64(self.last_update_ms),
            transaction_start_timestamp_ms=i64(self.start_ms),
        )

    @classmethod
    def from_record(cls, value: TransactionLogValue) -> TxnSnapshot:
        partitions = frozenset(
            (tp.topic, int(p))
            for tp in value.transaction_partitions or ()
            for p in tp.partition_ids
        )
        return cls(
            producer_id=int(value.producer_id),
            producer_epoch=int(value.producer_epoch),
            timeout_ms=int(value.transaction_timeout_ms),
            state=TransactionState(int(value.transaction_status)),
            partitions=partitions,
            start_ms=int(value.transaction_start_timestamp_ms),
            last_update_ms=int(value.transaction_last_update_timestamp_ms),
        )


class TransactionMetadata:
    """The live state of one transactional id inside its coordinator shard."""

    def __init__(self, transactional_id: str, current: TxnSnapshot) -> None:
        self.transactional_id = transactional_id
        self.current = current
        self.pending: TxnSnapshot | None = None
        # The epoch before the last bump, so a retried InitProducerId is recognised.
        self.last_producer_epoch = NO_PRODUCER_EPOCH

    @property
    def state(self) -> TransactionState:
        return self.current.state

    def prepare(self, state: TransactionState, now_ms: int, **changes: Any) -> TxnSnapshot:
        """Validates ``current.state -> state`` and holds the result as pending."""
        if self.pending is not None:
            raise IllegalTransition(
                f"{self.transactional_id}: {self.pending.state.name} still pending"
            )
        if self.current.state not in state.valid_previous_states:
            raise IllegalTransition(
                f"{self.transactional_id}: {self.current.state.name} -> {state.name} is not allowed"
            )
        self.pending = replace(self.current, state=state, last_update_ms=now_ms, **changes)
        return self.pending

    def complete(self) -> TxnSnapshot:
        """The pending record is durable: it becomes the current state."""
        if self.pending is None:
            raise IllegalTransition(f"{self.transactional_id}: nothing pending to complete")
        if self.pending.producer_epoch != self.current.producer_epoch:
            self.last_producer_epoch = self.current.producer_epoch
        self.current, self.pending = self.pending, None
        return self.current

    def cancel(self) -> None:
        """The write failed: forget the pending change, keep the current state."""
        self.pending = None
