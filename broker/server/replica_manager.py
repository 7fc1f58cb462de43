"""The ReplicaManager: every partition this broker hosts, and the one internal
API through which requests and coordinators touch them.

Internal API (used by the produce/fetch handlers and by the group and
transaction coordinators):

- ``await append_records(topic, partition, data, acks)`` appends client batches
  (idempotence checked) and returns ``AppendResult`` (first/last offset); raises
  ``KafkaError`` with the partition's error code.
- ``await append_marker(topic, partition, producer_id, producer_epoch, commit,
  coordinator_epoch)`` writes a COMMIT/ABORT control batch and returns its offset.
- ``read_batches(topic, partition, offset)`` yields ``(BatchHeader, bytes)`` of the
  log up to its end, to load an internal topic.
- ``ensure_internal_topic(name, partitions, configs)`` creates
  ``__consumer_offsets``/``__transaction_state`` if missing, returns ``TopicInfo``.
- ``high_watermark(topic, partition)`` / ``partition(topic, partition)`` for state.

Fetches wait in a purgatory (``fetch``) until ``min_bytes`` are available or
``max_wait`` passes, woken by appends on the partitions they read.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from broker.config import BrokerConfig, ConfigError, topic_config
from broker.controller import topic_configs
from broker.controller.topic_configs import Op
from broker.errors import ErrorCode, KafkaError
from broker.log.batch import BatchHeader
from broker.log.hw_checkpoint import HighWatermarkCheckpoint
from broker.log.ledger import FsyncLedger
from broker.log.log import AppendResult, Log
from broker.log.start_checkpoint import LogStartOffsetCheckpoint
from broker.log.txn_index import AbortedTxn
from broker.server.partition import Partition
from broker.server.topics import TopicInfo, TopicStore

log = logging.getLogger(__name__)


@dataclass
class FetchRequestPartition:
    topic: str
    partition: int
    offset: int
    max_bytes: int
    current_leader_epoch: int = -1


@dataclass
class FetchResult:
    error: ErrorCode = ErrorCode.none
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: bytes = b""
    aborted: list[AbortedTxn] = field(default_factory=list)


class ReplicaManager:
    def __init__(self, config: BrokerConfig, ledger: FsyncLedger, topics: TopicStore) -> None:
        self.config = config
        self.ledger = ledger
        self.topics = topics
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.hw_checkpoint = HighWatermarkCheckpoint(config.data_dir, ledger)
        self.recovered_hws = self.hw_checkpoint.read()
        self.start_checkpoint = LogStartOffsetCheckpoint(config.data_dir, ledger)
        self.recovered_starts = self.start_checkpoint.read()

    # -- lifecycle -----------------------------------------------------------
    def open_all(self, clean: bool) -> None:
        for topic in self.topics.topics.values():
            self._open_topic(topic, clean)

    def _open_topic(self, topic: TopicInfo, clean: bool, first: int = 0) -> None:
        """Opens the topic's partitions from index ``first`` on."""
        settings = topic_config(self.config, topic.configs)
        for index, assignment in enumerate(topic.partitions):
            if index < first:
                continue
            plog = self.open_log((topic.name, index), settings, clean)
            self.partitions[(topic.name, index)] = Partition(topic.name, index, plog, assignment)

    def open_log(self, tp: tuple[str, int], settings: dict[str, Any], clean: bool) -> Log:
        """A hosted partition's log. One kept from before starts at its checkpointed
        log start offset, read once; a new one at 0, even when the checkpoint still
        names a deleted topic of the same name (as Kafka, which reads it only for
        the logs it loads at start)."""
        directory = self.config.data_dir / f"{tp[0]}-{tp[1]}"
        start = self.recovered_starts.pop(tp, 0) if directory.exists() else 0
        return Log.open(directory, settings, self.ledger, clean, start)

    def close(self) -> None:
        self.checkpoint_high_watermarks()
        self.checkpoint_log_start_offsets()
        for partition in self.partitions.values():
            partition.log.close()

    def checkpoint_high_watermarks(self) -> None:
        """Writes ``replication-offset-checkpoint`` (periodically and at clean shutdown)."""
        hws = {tp: p.high_watermark for tp, p in self.partitions.items()}
        self.hw_checkpoint.write(hws)

    def checkpoint_log_start_offsets(self) -> None:
        """Writes ``log-start-offset-checkpoint`` (periodically and at clean
        shutdown) for the logs that start past their first segment."""
        starts = {
            tp: p.log.log_start_offset
            for tp, p in self.partitions.items()
            if p.log.log_start_offset > p.log.segments[0].base_offset
        }
        self.start_checkpoint.write(starts)

    # -- topics ----------------------------------------------------------------
    def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: dict[str, str],
        validate_only: bool = False,
    ) -> TopicInfo:
        """Creates a topic (CreateTopics, auto-creation); raises ``KafkaError``:
        TOPIC_ALREADY_EXISTS before any other refusal, as Kafka checks."""
        if name in self.topics.topics:
            raise KafkaError(ErrorCode.topic_already_exists, f"topic {name!r} already exists")
        num_partitions = self.config["num.partitions"] if num_partitions == -1 else num_partitions
        rf = (
            self.config["default.replication.factor"]
            if replication_factor == -1
            else replication_factor
        )
        if rf < 1 or rf > len(self.live_brokers()):
            raise KafkaError(
                ErrorCode.invalid_replication_factor,
                f"replication factor {rf} with {len(self.live_brokers())} broker(s) alive",
            )
        try:
            topic_config(self.config, configs)
        except ConfigError as e:
            raise KafkaError(ErrorCode.invalid_config, str(e)) from None
        if validate_only:
            return TopicInfo(name, "", [], configs)
        topic = self.topics.create(name, num_partitions, self.live_brokers()[:rf], configs)
        self._open_topic(topic, clean=True)
        log.info("created topic %s with %d partition(s)", name, num_partitions)
        return topic

    def add_partitions(self, name: str, count: int, validate_only: bool = False) -> None:
        """CreatePartitions on a single node: the topic grows to ``count``."""
        current = len(self.topics.topics[name].partitions) if name in self.topics.topics else 0
        if not current:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"no topic {name!r}")
        if count <= current:
            raise KafkaError(
                ErrorCode.invalid_partitions,
                f"topic {name!r} has {current} partitions; {count} adds none",
            )
        if validate_only:
            return
        topic = self.topics.add_partitions(name, count, self.live_brokers()[:1])
        self._open_topic(topic, clean=True, first=current)
        log.info("topic %s now has %d partition(s)", name, count)

    def alter_topic_configs(
        self, name: str, ops: list[Op], incremental: bool, validate_only: bool = False
    ) -> None:
        """IncrementalAlterConfigs/AlterConfigs of a topic on a single node."""
        topic = self.topics.topics.get(name)
        if topic is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"no topic {name!r}")
        configs = topic_configs.altered(topic.configs, ops, incremental)
        topic_configs.check(configs, len(topic.partitions[0].replicas))
        if validate_only:
            return
        self.topics.set_configs(name, configs)
        self.apply_topic_configs(self.topics.topics[name])

    def apply_topic_configs(self, topic: TopicInfo) -> None:
        """The topic's logs take its current configuration (segment size,
        retention, min ISR, ...) from their next use on."""
        settings = topic_config(self.config, topic.configs)
        for index in range(len(topic.partitions)):
            partition = self.partitions.get((topic.name, index))
            if partition is not None:
                partition.log.config = settings

    def delete_topic(self, name: str) -> None:
        topic = self.topics.delete(name)
        for index in range(len(topic.partitions)):
            partition = self.partitions.pop((name, index), None)
            if partition is not None:
                partition.log.delete()
                partition.wake()
        log.info("deleted topic %s", name)

    def ensure_internal_topic(
        self, name: str, num_partitions: int, configs: dict[str, str]
    ) -> TopicInfo:
        """Creates an internal topic once (replication factor capped by the cluster size)."""
        existing = self.topics.topics.get(name)
        if existing is not None:
            return existing
        return self.create_topic(name, num_partitions, len(self.live_brokers()), configs)

    def live_brokers(self) -> list[int]:
        return [self.config.node_id]

    # -- partitions ------------------------------------------------------------
    def partition(self, topic: str, index: int) -> Partition:
        try:
            return self.partitions[(topic, index)]
        except KeyError:
            raise KafkaError(
                ErrorCode.unknown_topic_or_partition, f"{topic}-{index} is not hosted here"
            ) from None

    def high_watermark(self, topic: str, index: int) -> int:
        return self.partition(topic, index).high_watermark

    # -- appends ---------------------------------------------------------------
    async def append_records(
        self, topic: str, index: int, data: bytes, acks: int, from_client: bool = True
    ) -> AppendResult:
        """Appends on the leader and, for acks=all, waits until the ISR has it."""
        result, partition = self.append_to_leader(topic, index, data, acks, from_client)
        if acks == -1:
            await partition.wait_replicated(result.last_offset + 1)
        return result

    def append_to_leader(
        self, topic: str, index: int, data: bytes, acks: int, from_client: bool = True
    ) -> tuple[AppendResult, Partition]:
        """Appends on the leader without waiting for replication (a produce
        request appends every partition first, then waits for all together)."""
        partition = self.partition(topic, index)
        partition.check_leader(self.config.node_id)
        if acks == -1 and partition.under_min_isr:
            min_isr = partition.log.config["min.insync.replicas"]
            raise KafkaError(
                ErrorCode.not_enough_replicas,
                f"ISR {partition.isr} < min.insync.replicas={min_isr}",
            )
        result = partition.log.append(bytearray(data), partition.leader_epoch, from_client)
        partition.maybe_advance_hw()
        return result, partition

    async def append_marker(
        self,
        topic: str,
        index: int,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
    ) -> int:
        """Only on the leader, and answered once the ISR has the marker (Kafka appends
        markers with acks=all), so a leader change cannot lose a decided outcome."""
        partition = self.partition(topic, index)
        partition.check_leader(self.config.node_id)
        offset = partition.log.append_marker(
            producer_id, producer_epoch, commit, coordinator_epoch, partition.leader_epoch
        )
        partition.maybe_advance_hw()
        await partition.wait_replicated(offset + 1)
        return offset

    async def delete_records(self, topic: str, index: int, offset: int, timeout_s: float) -> int:
        """DeleteRecords on the leader: raises the log start offset to ``offset``
        (-1: the HW) and returns the low watermark once it has reached it (Kafka's
        DelayedDeleteRecords); raises ``KafkaError``."""
        partition = self.partition(topic, index)
        partition.check_leader(self.config.node_id)
        requested = partition.delete_records_on_leader(offset)
        return await partition.wait_low_watermark(requested, timeout_s)

    # -- reads -----------------------------------------------------------------
    def read(
        self, request: FetchRequestPartition, max_bytes: int, read_committed: bool, min_one: bool
    ) -> FetchResult:
        """One partition of a fetch, at most ``max_bytes`` of it: records below the
        HW (or the LSO for read_committed)."""
        try:
            partition = self.partition(request.topic, request.partition)
            partition.check_leader_epoch(request.current_leader_epoch)
            partition.check_leader(self.config.node_id)
            plog = partition.log
            upper = partition.fetch_upper(read_committed)
            records = plog.read(request.offset, max_bytes, upper, min_one)
            aborted = (
                plog.aborted_transactions(request.offset, upper)
                if read_committed and records
                else []
            )
            return FetchResult(
                ErrorCode.none,
                partition.high_watermark,
                partition.last_stable_offset,
                plog.log_start_offset,
                records,
                aborted,
            )
        except KafkaError as e:
            result = FetchResult(e.code)
            if (request.topic, request.partition) in self.partitions:
                partition = self.partitions[(request.topic, request.partition)]
                result.high_watermark = partition.high_watermark
                result.last_stable_offset = partition.last_stable_offset
                result.log_start_offset = partition.log.log_start_offset
            return result

    async def fetch(
        self,
        requests: list[FetchRequestPartition],
        min_bytes: int,
        max_wait_ms: int,
        max_bytes: int,
        read_committed: bool,
    ) -> list[FetchResult]:
        """Reads all partitions, waiting (the fetch purgatory) until ``min_bytes``
        are available, an error occurs, or ``max_wait_ms`` passes."""
        deadline = time.monotonic() + max_wait_ms / 1000
        while True:
            results = self._read_all(requests, max_bytes, read_committed)
            available = sum(len(r.records) for r in results)
            errors = any(r.error != ErrorCode.none for r in results)
            remaining = deadline - time.monotonic()
            if available >= min_bytes or errors or remaining <= 0 or not requests:
                return results
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            watched = [self.partitions[(r.topic, r.partition)] for r in requests]
            for partition in watched:
                partition.watch(waiter)
            try:
                # asyncio.wait, not wait_for: on 3.11 wait_for can swallow a
                # cancellation that races the waiter (a shutdown would then hang)
                await asyncio.wait([waiter], timeout=remaining)
            finally:
                for partition in watched:
                    partition.unwatch(waiter)

    def _read_all(
        self, requests: list[FetchRequestPartition], max_bytes: int, read_committed: bool
    ) -> list[FetchResult]:
        results = []
        budget = max_bytes
        for request in requests:
            limit = min(request.max_bytes, max(budget, 0))
            result = self.read(request, limit, read_committed, min_one=budget == max_bytes)
            budget -= len(result.records)
            results.append(result)
        return results

    def read_batches(
        self, topic: str, index: int, offset: int
    ) -> Iterator[tuple[BatchHeader, bytes]]:
        """A coordinator loading after a leader change reads to the log end, as Kafka's
        do: a new leader's HW may still lag records its predecessor committed."""
        partition = self.partition(topic, index)
        return partition.log.read_batches(offset, partition.log.next_offset)

    # -- housekeeping ----------------------------------------------------------
    def flush_stale(self) -> None:
        for partition in self.partitions.values():
            partition.log.flush_if_stale()

    def compact_logs(self) -> int:
        """One compaction pass over every compacted log; returns records removed."""
        now_ms = int(time.time() * 1000)
        removed = 0
        for partition in self.partitions.values():
            stats = partition.log.compact(now_ms, partition.high_watermark)
            if stats.segments:
                log.info(
                    "compacted %s-%d: %d segment(s), %d record(s) removed, %d -> %d bytes",
                    partition.topic,
                    partition.index,
                    stats.segments,
                    stats.records_removed,
                    stats.bytes_before,
                    stats.bytes_after,
                )
            removed += stats.records_removed
        return removed

    def apply_retention(self) -> int:
        """Deletes expired segments and expires idle producers; returns segments deleted."""
        now_ms = int(time.time() * 1000)
        max_idle_ms = self.config["producer.id.expiration.ms"]
        deleted = 0
        for partition in self.partitions.values():
            deleted += partition.log.apply_retention(now_ms, partition.high_watermark)
            partition.log.producer_state.remove_expired(now_ms, max_idle_ms)
        return deleted
