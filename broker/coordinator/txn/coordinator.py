"""The transaction coordinator (Kafka's ``TransactionCoordinator``).

Every transition is validated by :mod:`broker.coordinator.txn.state`, written to
``__transaction_state`` and only then applied. EndTxn answers once PrepareCommit
or PrepareAbort is durable (the two-phase-commit decision point); markers and
the Complete record follow in the background, and a coordinator that restarts
in a Prepare state rolls the transaction forward from the log.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from broker.coordinator.partitioning import GROUP_TOPIC, TRANSACTION_TOPIC
from broker.coordinator.runtime import CoordinatorLog, CoordinatorRuntime
from broker.coordinator.txn import records
from broker.coordinator.txn.markers import MarkerChannel, TxnMarker, write_markers_until_done
from broker.coordinator.txn.shard import TxnShard
from broker.coordinator.txn.state import (
    MAX_PRODUCER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TopicPartition,
    TransactionMetadata,
    TransactionState,
    TxnSnapshot,
)
from broker.errors import ErrorCode, KafkaError

log = logging.getLogger(__name__)
S = TransactionState


def now_ms() -> int:
    return int(time.time() * 1000)


class ProducerIds(Protocol):
    async def next_id(self) -> int:
        """An id no producer was ever given; raises a retriable ``KafkaError``."""
        ...


@dataclass(frozen=True, slots=True)
class TxnConfig:
    num_partitions: int = 50
    max_timeout_ms: int = 900_000
    abort_interval_ms: int = 10_000


class TransactionCoordinator:
    def __init__(
        self,
        config: TxnConfig,
        log_: CoordinatorLog,
        markers: MarkerChannel,
        producer_ids: ProducerIds,
        offsets_partition_for: Callable[[str], int],
    ) -> None:
        self.config = config
        self.runtime: CoordinatorRuntime[TxnShard] = CoordinatorRuntime(
            TRANSACTION_TOPIC,
            config.num_partitions,
            log_,
            lambda p: TxnShard(p, self._roll_forward),
        )
        self._markers = markers
        self._producer_ids = producer_ids
        self._offsets_partition_for = offsets_partition_for
        self._timer: asyncio.Task[None] | None = None

    # ---- lifecycle -------------------------------------------------------------

    def start(self) -> None:
        self._timer = asyncio.get_running_loop().create_task(self._abort_expired_forever())

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self.runtime.unload_all()

    def _roll_forward(self, shard: TxnShard) -> None:
        """After loading, finish every transaction the log shows as decided."""
        for md in shard.transactions.values():
            if md.state.is_prepare:
                log.info(
                    "%s-%d: rolling %s forward from %s",
                    TRANSACTION_TOPIC, shard.partition, md.transactional_id, md.state.kafka_name,
                )  # fmt: skip
                shard.spawn(self._complete(shard, md))

    # ---- InitProducerId -----------------------------------------------------------

    async def init_producer_id(
        self, transactional_id: str | None, timeout_ms: int, producer_id: int, epoch: int
    ) -> tuple[int, int]:
        """Returns ``(producer_id, epoch)``; bumps the epoch of a transactional id,
        fencing older instances and aborting their open transaction first."""
        if not transactional_id:
            return await self._producer_ids.next_id(), 0
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            raise KafkaError(ErrorCode.invalid_transaction_timeout)
        shard = self.runtime.shard_for(transactional_id)
        md = shard.transactions.get(transactional_id)
        if md is None:
            first = TxnSnapshot(
                await self._producer_ids.next_id(), NO_PRODUCER_EPOCH, timeout_ms, S.EMPTY,
                frozenset(), -1, now_ms(),
            )  # fmt: skip
            # Another request may have created it while the id was fetched.
            md = shard.transactions.setdefault(
                transactional_id, TransactionMetadata(transactional_id, first)
            )
        if md.pending is not None:
            raise KafkaError(ErrorCode.concurrent_transactions)
        cur = md.current
        if producer_id != NO_PRODUCER_ID:
            if producer_id != cur.producer_id:
                raise KafkaError(ErrorCode.producer_fenced)
            if epoch != cur.producer_epoch:
                if epoch == md.last_producer_epoch and not cur.state.is_prepare:
                    return cur.producer_id, cur.producer_epoch  # a retried bump
                raise KafkaError(ErrorCode.producer_fenced)
        if cur.state is S.ONGOING:
            await self._fence_and_abort(shard, md)
            raise KafkaError(ErrorCode.concurrent_transactions)
        if cur.state not in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            raise KafkaError(ErrorCode.concurrent_transactions)
        if cur.producer_epoch >= MAX_PRODUCER_EPOCH - 1:
            new_pid, new_epoch = await self._producer_ids.next_id(), 0
            if md.pending is not None or md.current is not cur:
                raise KafkaError(ErrorCode.concurrent_transactions)
        else:
            new_pid, new_epoch = cur.producer_id, cur.producer_epoch + 1
        md.prepare(
            S.EMPTY, now_ms(), producer_id=new_pid, producer_epoch=new_epoch,
            timeout_ms=timeout_ms, partitions=frozenset(), start_ms=-1,
        )  # fmt: skip
        done = await self._persist(shard, md)
        return done.producer_id, done.producer_epoch

    # ---- AddPartitionsToTxn / AddOffsetsToTxn ------------------------------------------

    async def add_partitions(
        self, transactional_id: str, producer_id: int, epoch: int, partitions: set[TopicPartition]
    ) -> None:
        shard, md = self._lookup(transactional_id, producer_id, epoch)
        cur = md.current
        if md.pending is not None or cur.state.is_prepare or cur.state is S.PREPARE_EPOCH_FENCE:
            raise KafkaError(ErrorCode.concurrent_transactions)
        if cur.state is S.ONGOING and partitions <= cur.partitions:
            return
        if cur.state is S.DEAD:
            raise KafkaError(ErrorCode.invalid_txn_state)
        start = cur.start_ms if cur.state is S.ONGOING else now_ms()
        md.prepare(S.ONGOING, now_ms(), partitions=cur.partitions | partitions, start_ms=start)
        await self._persist(shard, md)

    def verify(
        self, transactional_id: str, producer_id: int, epoch: int, partitions: set[TopicPartition]
    ) -> dict[TopicPartition, ErrorCode]:
        """KIP-890's check for a partition leader about to start a transaction on a
        partition: is each partition in this producer's ongoing transaction, at this
        epoch? A write arriving after its transaction ended fails it."""
        try:
            _shard, md = self._lookup(transactional_id, producer_id, epoch)
        except KafkaError as exc:
            return dict.fromkeys(partitions, exc.code)
        ongoing = md.state is S.ONGOING
        return {
            tp: ErrorCode.none if ongoing and tp in md.current.partitions
            else ErrorCode.invalid_txn_state
            for tp in partitions
        }  # fmt: skip

    async def add_offsets(
        self, transactional_id: str, producer_id: int, epoch: int, group_id: str
    ) -> None:
        offsets_partition = self._offsets_partition_for(group_id)
        await self.add_partitions(
            transactional_id, producer_id, epoch, {(GROUP_TOPIC, offsets_partition)}
        )

    # ---- EndTxn ----------------------------------------------------------------------

    async def end_txn(
        self, transactional_id: str, producer_id: int, epoch: int, commit: bool
    ) -> None:
        shard, md = self._lookup(transactional_id, producer_id, epoch)
        if md.pending is not None:
            raise KafkaError(ErrorCode.concurrent_transactions)
        state = md.state
        if state is S.ONGOING:
            md.prepare(S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, now_ms())
            await self._persist(shard, md)
            shard.spawn(self._complete(shard, md))
            return
        wanted_done = S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT
        wanted_prepare = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
        if state is wanted_done:
            return  # a retry of an EndTxn that already finished
        if state is wanted_prepare:
            raise KafkaError(ErrorCode.concurrent_transactions)
        raise KafkaError(ErrorCode.invalid_txn_state)

    # ---- DescribeTransactions / ListTransactions ---------------------------------------

    def describe(self, transactional_id: str) -> TxnSnapshot:
        md = self.runtime.shard_for(transactional_id).transactions.get(transactional_id)
        if md is None or md.current.producer_epoch == NO_PRODUCER_EPOCH:
            raise KafkaError(ErrorCode.transactional_id_not_found)
        return md.current

    def list_transactions(self) -> list[tuple[str, TxnSnapshot]]:
        return [
            (txn_id, md.current)
            for shard in self.runtime.active_shards()
            for txn_id, md in shard.transactions.items()
            if md.current.producer_epoch != NO_PRODUCER_EPOCH
        ]

    # ---- timeouts --------------------------------------------------------------------

    async def _abort_expired_forever(self) -> None:
        while True:
            await asyncio.sleep(self.config.abort_interval_ms / 1000)
            try:
                await self.abort_expired()
            except Exception:  # the timer must outlive one bad transaction
                log.exception("aborting timed-out transactions failed")

    async def abort_expired(self) -> None:
        """Fences and aborts every Ongoing transaction older than its timeout."""
        now = now_ms()
        for shard in self.runtime.active_shards():
            for md in list(shard.transactions.values()):
                cur = md.current
                expired = cur.state is S.ONGOING and cur.start_ms + cur.timeout_ms < now
                if expired and md.pending is None:
                    log.info("aborting timed-out transaction %s", md.transactional_id)
                    await self._fence_and_abort(shard, md)

    # ---- helpers ---------------------------------------------------------------------

    def _lookup(
        self, transactional_id: str, producer_id: int, epoch: int
    ) -> tuple[TxnShard, TransactionMetadata]:
        shard = self.runtime.shard_for(transactional_id)
        md = shard.transactions.get(transactional_id)
        if md is None or md.current.producer_epoch == NO_PRODUCER_EPOCH:
            raise KafkaError(ErrorCode.invalid_producer_id_mapping)
        if md.current.producer_id != producer_id:
            raise KafkaError(ErrorCode.invalid_producer_id_mapping)
        if md.current.producer_epoch != epoch:
            raise KafkaError(ErrorCode.producer_fenced)
        return shard, md

    async def _persist(self, shard: TxnShard, md: TransactionMetadata) -> TxnSnapshot:
        assert md.pending is not None
        if not shard.active:  # unloaded while this request waited
            md.cancel()
            raise KafkaError(ErrorCode.not_coordinator)
        key = records.encode_key(md.transactional_id)
        value = records.encode_value(md.pending.to_record())
        try:
            await self.runtime.write(shard.partition, [(key, value)])
        except BaseException:
            md.cancel()
            raise
        return md.complete()

    async def _fence_and_abort(self, shard: TxnShard, md: TransactionMetadata) -> None:
        """Bumps the epoch (so the old producer is fenced) and aborts, as Kafka does
        for a timed-out transaction or a new instance of the same transactional id."""
        ongoing = md.current
        md.prepare(
            S.PREPARE_EPOCH_FENCE,
            now_ms(),
            producer_epoch=min(ongoing.producer_epoch + 1, MAX_PRODUCER_EPOCH),
        )
        md.complete()  # in memory only: Kafka never logs PrepareEpochFence
        md.prepare(S.PREPARE_ABORT, now_ms())
        try:
            await self._persist(shard, md)
        except BaseException:
            md.current = ongoing
            raise
        shard.spawn(self._complete(shard, md))

    async def _complete(self, shard: TxnShard, md: TransactionMetadata) -> None:
        """Markers to every partition, then CompleteCommit/CompleteAbort."""
        decided = md.current
        commit = decided.state is S.PREPARE_COMMIT
        marker = TxnMarker(
            decided.producer_id,
            decided.producer_epoch,
            commit,
            self.runtime.epoch(shard.partition),
        )
        await write_markers_until_done(self._markers, marker, decided.partitions)
        while shard.active:
            try:
                md.prepare(
                    S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT,
                    now_ms(),
                    partitions=frozenset(),
                )
                await self._persist(shard, md)
                return
            except KafkaError as exc:
                log.warning("completing %s failed (%s); retrying", md.transactional_id, exc)
                await asyncio.sleep(0.1)
