"""A coordinator as shards over the partitions of an internal topic.

Kafka's ``CoordinatorRuntime`` in small: a shard owns one partition of
``__consumer_offsets`` or ``__transaction_state``. Becoming the partition's
leader loads the shard by replaying the partition from its start; until that
finishes requests get COORDINATOR_LOAD_IN_PROGRESS, and a partition this node
does not lead gets NOT_COORDINATOR. Every state change is appended to the
partition (as a record batch) before it is applied, so replay rebuilds exactly
what clients were told.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from kafka.record.default_records import (  # type: ignore[import-untyped]
    DefaultRecordBatch,
    DefaultRecordBatchBuilder,
)

from broker.coordinator.partitioning import partition_for
from broker.errors import ErrorCode, KafkaError
from broker.log.batch import CONTROL_COMMIT, BatchHeader, CorruptBatch, control_type

log = logging.getLogger(__name__)

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1


class AppendResult(Protocol):
    @property
    def first_offset(self) -> int: ...


class CoordinatorLog(Protocol):
    """What a coordinator needs from the partitions of its internal topic (the
    ``ReplicaManager``'s internal API)."""

    async def append_records(
        self, topic: str, index: int, data: bytes, acks: int, from_client: bool = True
    ) -> AppendResult:
        """Appends coordinator-built batches; raises ``KafkaError``."""
        ...

    def read_batches(
        self, topic: str, index: int, offset: int
    ) -> Iterator[tuple[BatchHeader, bytes]]:
        """Each committed batch from ``offset`` on, with its raw bytes."""
        ...


# What a failed append to an internal partition means to the coordinator's
# client, as Kafka's coordinators translate it: retry elsewhere or later.
APPEND_ERRORS = {
    ErrorCode.unknown_topic_or_partition: ErrorCode.coordinator_not_available,
    ErrorCode.not_enough_replicas: ErrorCode.coordinator_not_available,
    ErrorCode.not_enough_replicas_after_append: ErrorCode.coordinator_not_available,
    ErrorCode.request_timed_out: ErrorCode.coordinator_not_available,
    ErrorCode.not_leader_or_follower: ErrorCode.not_coordinator,
    ErrorCode.kafka_storage_error: ErrorCode.not_coordinator,
}


class CoordinatorShard(Protocol):
    """One partition's state machine, rebuilt from that partition's records."""

    def replay(
        self, key: bytes, value: bytes | None, producer_id: int, producer_epoch: int
    ) -> None:
        """Applies one record; ``producer_id`` is set for transactional records."""
        ...

    def replay_marker(self, producer_id: int, producer_epoch: int, commit: bool) -> None:
        """Applies a transaction marker found in the partition."""
        ...

    def activate(self) -> None:
        """Loading finished: start timers and finish work the log shows as half-done."""
        ...

    def deactivate(self) -> None:
        """The partition moved away or the broker stops: cancel timers."""
        ...


class ShardStatus(enum.Enum):
    LOADING = "loading"
    ACTIVE = "active"


S = TypeVar("S", bound=CoordinatorShard)


@dataclass(slots=True)
class ShardSlot(Generic[S]):
    shard: S
    status: ShardStatus
    epoch: int


def build_batch(
    records: Iterable[tuple[bytes, bytes | None]],
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
) -> bytes:
    """One uncompressed batch; transactional when it carries a producer id."""
    transactional = producer_id != NO_PRODUCER_ID
    builder = DefaultRecordBatchBuilder(
        2, 0, transactional, producer_id, producer_epoch, NO_SEQUENCE, 1 << 30
    )
    now = int(time.time() * 1000)
    for offset_delta, (key, value) in enumerate(records):
        builder.append(offset_delta, now, key, value, [])
    return bytes(builder.build())


def replay_batch(shard: CoordinatorShard, header: BatchHeader, raw: bytes) -> None:
    """Feeds every record of one batch to ``shard``."""
    if header.is_control:
        commit = control_type(raw) == CONTROL_COMMIT
        shard.replay_marker(header.producer_id, header.producer_epoch, commit)
        return
    pid = header.producer_id if header.is_transactional else NO_PRODUCER_ID
    for record in DefaultRecordBatch(bytes(raw)):
        if record.key is not None:
            shard.replay(bytes(record.key), record.value, pid, header.producer_epoch)


class CoordinatorRuntime(Generic[S]):
    """The shards of one coordinator on this node, keyed by internal partition."""

    def __init__(
        self,
        topic: str,
        num_partitions: int,
        log_: CoordinatorLog,
        new_shard: Callable[[int], S],
    ) -> None:
        self.topic = topic
        self.num_partitions = num_partitions
        self._log = log_
        self._new_shard = new_shard
        self._slots: dict[int, ShardSlot[S]] = {}

    def partition_for(self, key: str) -> int:
        return partition_for(key, self.num_partitions)

    async def load(self, partition: int, epoch: int = 0) -> None:
        """Becomes coordinator of ``partition``: replays it, then serves it. A shard
        loaded under an earlier epoch is dropped first, so its timers and marker
        writers never act beside the new one."""
        self.unload(partition)
        shard = self._new_shard(partition)
        slot: ShardSlot[S] = ShardSlot(shard, ShardStatus.LOADING, epoch)
        self._slots[partition] = slot
        offset = 0
        try:
            for count, (header, raw) in enumerate(self._log.read_batches(self.topic, partition, 0)):
                replay_batch(shard, header, raw)
                offset = header.next_offset
                if count % 100 == 99:
                    await asyncio.sleep(0)  # keep serving other requests while loading
        except (CorruptBatch, ValueError) as exc:
            # A shard that cannot be rebuilt must not serve half a state.
            if self._slots.get(partition) is slot:
                del self._slots[partition]
            raise ValueError(f"{self.topic}-{partition} after offset {offset}: {exc}") from exc
        if self._slots.get(partition) is slot:
            slot.status = ShardStatus.ACTIVE
            shard.activate()
            log.debug("loaded %s-%d up to offset %d", self.topic, partition, offset)

    def unload(self, partition: int) -> None:
        slot = self._slots.pop(partition, None)
        if slot is not None:
            slot.shard.deactivate()

    def unload_all(self) -> None:
        for partition in list(self._slots):
            self.unload(partition)

    def shard(self, partition: int) -> S:
        """The active shard, or the error Kafka gives when this node cannot serve it."""
        slot = self._slots.get(partition)
        if slot is None:
            raise KafkaError(ErrorCode.not_coordinator)
        if slot.status is ShardStatus.LOADING:
            raise KafkaError(ErrorCode.coordinator_load_in_progress)
        return slot.shard

    def active_shards(self) -> list[S]:
        return [slot.shard for slot in self._slots.values() if slot.status is ShardStatus.ACTIVE]

    def shard_for(self, key: str) -> S:
        return self.shard(self.partition_for(key))

    def epoch(self, partition: int) -> int:
        slot = self._slots.get(partition)
        if slot is None:
            raise KafkaError(ErrorCode.not_coordinator)
        return slot.epoch

    def owns(self, partition: int) -> bool:
        return partition in self._slots

    async def write(
        self,
        partition: int,
        records: Sequence[tuple[bytes, bytes | None]],
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = -1,
    ) -> int:
        """Appends ``records`` as one batch; the caller applies them after this returns.

        Append failures become the coordinator errors clients retry on
        (``APPEND_ERRORS``); others, such as a fenced producer epoch, pass through."""
        if partition not in self._slots:
            raise KafkaError(ErrorCode.not_coordinator)
        batch = build_batch(records, producer_id, producer_epoch)
        try:
            result = await self._log.append_records(self.topic, partition, batch, -1, False)
        except KafkaError as exc:
            if exc.code in APPEND_ERRORS:
                raise KafkaError(
                    APPEND_ERRORS[exc.code], f"{self.topic}-{partition}: {exc}"
                ) from exc
            raise
        return result.first_offset
