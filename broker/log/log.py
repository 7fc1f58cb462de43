"""A partition's log: an ordered list of segments plus producer state (Kafka's
``UnifiedLog``, the storage half only: high watermarks and replication live in
``broker.server.partition``).

Recovery at start: after an unclean shutdown every segment is re-read with CRC
checks, a torn tail is cut, any segment after a damaged or shortened one is
dropped (its base offset no longer follows), indexes are rebuilt, and producer
state is restored from the newest snapshot plus a replay of the log after it.

The log start offset is the log's own, as Kafka's ``logStartOffset``: at least
the first segment's base offset, and raised past it by DeleteRecords (or a
follower adopting its leader's), so it may fall inside a segment. Reads below it
are out of range; whole segments below it are deleted by the retention pass; it
is kept across restarts by the data dir's ``log-start-offset-checkpoint``.
"""

from __future__ import annotations

import bisect
import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from broker.errors import ErrorCode, KafkaError
from broker.log.batch import (
    INFLATE_FACTOR,
    BatchHeader,
    CorruptBatch,
    control_batch,
    control_record,
    first_offset_at_or_after,
    iter_batches,
    stamp,
)
from broker.log.checkpoint_file import CheckpointError
from broker.log.cleaner import Cleaner, CleanStats
from broker.log.leader_epoch_cache import LeaderEpochCache
from broker.log.ledger import FsyncLedger, fsync_dir
from broker.log.producer_state import CompletedTxn, ProducerStateManager
from broker.log.segment import LogSegment
from broker.log.txn_index import AbortedTxn

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AppendResult:
    first_offset: int
    last_offset: int
    duplicate: bool = False


class Log:
    def __init__(self, directory: Path, config: dict[str, Any], ledger: FsyncLedger) -> None:
        self.directory = directory
        self.config = config
        self.ledger = ledger
        self.segments: list[LogSegment] = []
        self.producer_state = ProducerStateManager(directory, ledger)
        self.epochs = LeaderEpochCache(directory, ledger)
        self.recovery_point = 0  # everything below is fsynced
        self._unflushed_messages = 0
        self._last_flush = time.monotonic()
        self._new_entries: set[Path] = set()  # directories with entries not yet fsynced
        self._cleaned_to = 0  # end of the range the last compaction pass covered
        self._start = 0  # the log start offset

    # -- opening -------------------------------------------------------------
    @classmethod
    def open(
        cls,
        directory: Path,
        config: dict[str, Any],
        ledger: FsyncLedger,
        clean: bool,
        start: int = 0,
    ) -> Log:
        """``start``: the checkpointed log start offset (0 without one)."""
        created = not directory.exists()
        directory.mkdir(parents=True, exist_ok=True)
        self = cls(directory, config, ledger)
        if created:
            self._new_entries.add(directory.parent)
        self._load(clean, start)
        return self

    def _load(self, clean: bool, start: int) -> None:
        for stray in self.directory.glob("*.tmp"):
            stray.unlink()
        bases = sorted(int(p.stem) for p in self.directory.glob("*.log") if p.stem.isdigit())
        for base in bases:
            segment = LogSegment(
                self.directory, base, self.config["index.interval.bytes"], self.ledger
            )
            if self.segments and base != self.segments[-1].next_offset:
                log.warning(
                    "%s: segment %d does not follow offset %d; dropped",
                    self.directory,
                    base,
                    self.next_offset,
                )
                segment.delete()
                continue
            error = segment.load(validate=not clean)
            self.segments.append(segment)
            if error is not None:
                log.warning("%s: truncated a damaged tail: %s", self.directory, error)
        if not self.segments:
            self.segments.append(self._new_segment(0))
        self._start = max(start, self.segments[0].base_offset)
        if self._start > self.next_offset:
            # as Kafka's LogLoader: the records up to the checkpointed start are
            # gone (a power loss cut them), so the log starts over there
            log.warning(
                "%s: log ends at %d, before its start %d; starting empty there",
                self.directory,
                self.next_offset,
                self._start,
            )
            self._reset_segments(self._start)
        self.recovery_point = self.next_offset
        self._rebuild_producer_state()
        self._load_epochs(clean)

    def _load_epochs(self, clean: bool) -> None:
        """The checkpoint, cut to the recovered log; after a crash (or without a
        checkpoint) the epochs of the batches past its last entry are added, since a
        batch may have reached the disk without the checkpoint naming its epoch."""
        try:
            loaded = self.epochs.load()
        except CheckpointError as e:
            log.warning("%s; rebuilding it from the log", e)
            loaded = False
        if loaded:
            self.epochs.truncate_from_end(self.next_offset)
            self.epochs.truncate_from_start(self.log_start_offset)
            if clean:
                return
        else:
            self.epochs.entries = []
        entries = self.epochs.entries
        start = entries[-1].start_offset if entries else self.log_start_offset
        for _, _, header in self._headers_from(start):
            # a batch that straddles the log start holds its epoch from there on
            self.epochs.assign(header.leader_epoch, max(header.base_offset, self._start))

    def _new_segment(self, base: int) -> LogSegment:
        segment = LogSegment(self.directory, base, self.config["index.interval.bytes"], self.ledger)
        self._new_entries.add(self.directory)
        return segment

    def _rebuild_producer_state(self) -> None:
        """Newest snapshot, then replay of the log after it (rebuilding aborted-txn entries)."""
        state = self.producer_state
        state.load_latest(below=self.next_offset)
        if state.map_end_offset < self.log_start_offset:
            state.replace_producers({})
            state.map_end_offset = self.log_start_offset
        for segment, pos, header in self._headers_from(state.map_end_offset):
            raw = segment.read_at(pos, header.size) if header.is_control else b""
            self._apply_stored(header, raw, segment)

    def _headers_from(self, offset: int):
        for segment in self.segments[self._segment_index(offset) :]:
            for pos, header in segment.iter_headers(0):
                if header.last_offset >= offset:
                    yield segment, pos, header

    # -- offsets -------------------------------------------------------------
    @property
    def log_start_offset(self) -> int:
        return self._start

    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        """Raises the log start offset to ``offset`` (DeleteRecords on a leader, the
        leader's on a follower), never lowers it; the caller checks ``offset``
        against the HW. Returns whether it moved."""
        if offset <= self._start:
            return False
        if offset > self.next_offset:
            raise KafkaError(
                ErrorCode.offset_out_of_range,
                f"log start {offset} past the log end {self.next_offset}",
            )
        self._start = offset
        self.epochs.truncate_from_start(offset)
        log.info("%s: log start offset raised to %d", self.directory, offset)
        return True

    @property
    def next_offset(self) -> int:
        """The log end offset (LEO)."""
        return self.segments[-1].next_offset

    @property
    def inflate_limit(self) -> int:
        """How far a batch's records may inflate when the broker decodes them."""
        return INFLATE_FACTOR * self.config["max.message.bytes"]

    @property
    def size(self) -> int:
        return sum(s.size for s in self.segments)

    def _segment_index(self, offset: int) -> int:
        i = bisect.bisect_right([s.base_offset for s in self.segments], offset) - 1
        return max(i, 0)

    # -- appends -------------------------------------------------------------
    def append(self, data: bytearray, leader_epoch: int, from_client: bool = True) -> AppendResult:
        """Validates and appends a producer's batches; returns their offsets.

        A batch that repeats one of its producer's last five is not written
        again: the original offsets are returned, as Kafka does.
        """
        try:
            batches = list(iter_batches(data))
        except CorruptBatch as e:
            raise KafkaError(ErrorCode.corrupt_message, str(e)) from None
        if not batches:
            raise KafkaError(ErrorCode.invalid_record, "no record batch in the request")
        for _, header in batches:
            if header.size > self.config["max.message.bytes"]:
                raise KafkaError(ErrorCode.message_too_large, f"batch of {header.size} bytes")
            if header.size > self.config["segment.bytes"]:
                raise KafkaError(ErrorCode.record_list_too_large, f"batch of {header.size} bytes")
            if from_client and header.is_control:
                raise KafkaError(ErrorCode.invalid_record, "clients may not write control batches")
        if any(h.has_producer_id for _, h in batches):
            if len(batches) != 1:
                raise KafkaError(
                    ErrorCode.invalid_record, "an idempotent produce must carry exactly one batch"
                )
            duplicate = self.producer_state.check_append(batches[0][1], from_client)
            if duplicate is not None:
                return AppendResult(duplicate.first_offset, duplicate.last_offset, duplicate=True)
        offset = self.next_offset
        self.epochs.assign(leader_epoch, offset)
        stamped: list[tuple[int, BatchHeader]] = []
        for pos, header in batches:
            stamp(data, pos, offset, leader_epoch)
            stamped.append((pos, replace(header, base_offset=offset, leader_epoch=leader_epoch)))
            offset = stamped[-1][1].next_offset
        segment = self._segment_for(len(data))
        segment.append(data, stamped)
        for _, header in stamped:
            self._apply(header, None, segment)
        self._unflushed_messages += sum(h.record_count for _, h in stamped)
        self._flush_if_due()
        return AppendResult(stamped[0][1].base_offset, stamped[-1][1].last_offset)

    def append_replicated(self, data: bytearray) -> None:
        """Appends batches copied from the partition leader as they are: their offsets,
        leader epochs and producer state come from the leader (a follower's append)."""
        try:
            batches = list(iter_batches(data))
        except CorruptBatch as e:
            raise KafkaError(ErrorCode.corrupt_message, str(e)) from None
        if not batches or batches[0][1].base_offset != self.next_offset:
            raise KafkaError(ErrorCode.unknown_server_error, "replicated batches out of order")
        for _, header in batches:
            self.epochs.assign(header.leader_epoch, header.base_offset)
        segment = self._segment_for(len(data))
        segment.append(data, batches)
        for pos, header in batches:
            self._apply_stored(header, data[pos : pos + header.size], segment)
        self._unflushed_messages += sum(h.record_count for _, h in batches)
        self._flush_if_due()

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        leader_epoch: int,
    ) -> int:
        """Appends a COMMIT or ABORT control batch ending the producer's transaction
        here; returns its offset. Raises PRODUCER_FENCED for an older producer epoch
        and TRANSACTION_COORDINATOR_FENCED for an older coordinator epoch."""
        self.producer_state.check_marker(producer_id, producer_epoch, coordinator_epoch)
        data = control_batch(
            producer_id, producer_epoch, commit, coordinator_epoch, int(time.time() * 1000)
        )
        ((pos, header),) = iter_batches(data)
        offset = self.next_offset
        self.epochs.assign(leader_epoch, offset)
        stamp(data, pos, offset, leader_epoch)
        header = replace(header, base_offset=offset, leader_epoch=leader_epoch)
        segment = self._segment_for(len(data))
        segment.append(data, [(pos, header)])
        self._apply(header, 1 if commit else 0, segment)
        self.producer_state.set_coordinator_epoch(producer_id, coordinator_epoch)
        self._unflushed_messages += 1
        self._flush_if_due()
        return offset

    def _apply(self, header: BatchHeader, kind: int | None, segment: LogSegment) -> None:
        completed = self.producer_state.update(header, kind)
        if completed is not None and completed.aborted:
            segment.txn_index.append(self._aborted_entry(completed))

    def _apply_stored(self, header: BatchHeader, raw: bytes, segment: LogSegment) -> None:
        """A batch read back or copied from the leader. A marker also records the
        coordinator epoch that wrote it, so a replica that becomes leader refuses a
        deposed coordinator's late markers (TRANSACTION_COORDINATOR_FENCED)."""
        if not header.is_control:
            self._apply(header, None, segment)
            return
        kind, coordinator_epoch = control_record(raw)
        self._apply(header, kind, segment)
        if header.has_producer_id:
            self.producer_state.set_coordinator_epoch(header.producer_id, coordinator_epoch)

    def _aborted_entry(self, txn: CompletedTxn) -> AbortedTxn:
        unstable = self.producer_state.first_unstable_offset()
        lso = unstable if unstable is not None else txn.last_offset + 1
        return AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, lso)

    def _segment_for(self, size: int) -> LogSegment:
        active = self.segments[-1]
        full = active.size + size > self.config["segment.bytes"]
        old = time.time() - active.created_at > self.config["segment.ms"] / 1000
        index_full = len(active.index.offsets) >= self.config["segment.index.bytes"] // 8
        if active.size > 0 and (full or old or index_full):
            self.roll()
        return self.segments[-1]

    def roll(self) -> None:
        """Starts a new segment at the LEO; the old one is flushed and producer
        state snapshotted, as Kafka does on roll."""
        self.flush()
        self.producer_state.take_snapshot()
        self.segments[-1].forget_recent()
        self.segments.append(self._new_segment(self.next_offset))

    # -- durability ------------------------------------------------------------
    def _flush_if_due(self) -> None:
        if self._unflushed_messages >= self.config["flush.messages"]:
            self.flush()

    def flush_if_stale(self) -> None:
        """Called periodically: enforces ``flush.ms``."""
        if (
            self._unflushed_messages
            and (time.monotonic() - self._last_flush) * 1000 >= self.config["flush.ms"]
        ):
            self.flush()

    def flush(self) -> None:
        """fsyncs every segment holding data past the recovery point, and the
        directories whose new entries (segment files, this log's directory) are
        not durable yet: deferred to here so that creating a topic costs no fsync."""
        dirty = self.segments[self._segment_index(self.recovery_point) :]
        if any(segment.dirty for segment in dirty):
            for directory in sorted(self._new_entries, key=lambda d: len(d.parts), reverse=True):
                fsync_dir(directory)
            self._new_entries.clear()
        for segment in dirty:
            segment.flush()
        self.recovery_point = self.next_offset
        self._unflushed_messages = 0
        self._last_flush = time.monotonic()

    def close(self) -> None:
        """Clean shutdown: flush, snapshot producer state, close files."""
        self.flush()
        self.producer_state.take_snapshot()
        for segment in self.segments:
            segment.close()

    def delete(self) -> None:
        for segment in self.segments:
            segment.delete()
        for path in self.directory.iterdir():
            path.unlink()
        self.directory.rmdir()
        fsync_dir(self.directory.parent)

    # -- reads -----------------------------------------------------------------
    def check_offset(self, offset: int) -> None:
        if offset < self.log_start_offset or offset > self.next_offset:
            raise KafkaError(
                ErrorCode.offset_out_of_range,
                f"offset {offset} outside [{self.log_start_offset}, {self.next_offset}]",
            )

    def read(self, offset: int, max_bytes: int, upper: int, min_one: bool = True) -> bytes:
        """Whole batches from ``offset`` below ``upper``; OFFSET_OUT_OF_RANGE outside the log.
        At the log end there is nothing to read, and no segment is searched
        (Kafka's LocalLog.read answers such a read empty at once too): a
        caught-up follower or consumer asks for exactly that on every fetch."""
        self.check_offset(offset)
        if offset == self.next_offset:
            return b""
        for segment in self.segments[self._segment_index(offset) :]:
            data = segment.read(offset, max_bytes, upper, min_one)
            if data or segment.next_offset >= upper:
                return data
        return b""

    def read_batches(self, offset: int, upper: int):
        """Yields the raw bytes of each batch from ``offset`` below ``upper``
        (for coordinators loading an internal topic)."""
        for segment, pos, header in self._headers_from(max(offset, self.log_start_offset)):
            if header.base_offset >= upper:
                return
            yield header, segment.read_at(pos, header.size)

    def aborted_transactions(self, start: int, upper: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping ``[start, upper)`` for read_committed fetches."""
        return [
            txn
            for segment in self.segments
            for txn in segment.txn_index.entries
            if txn.last_offset >= start and txn.first_offset < upper
        ]

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record from the log start stamped at
        or after ``timestamp_ms``."""
        for segment in self.segments[self._segment_index(self._start) :]:
            if segment.max_timestamp < timestamp_ms:
                continue
            for pos, header in segment.iter_headers(0):
                if (
                    header.last_offset >= self._start
                    and header.max_timestamp >= timestamp_ms
                    and not header.is_control
                ):
                    try:
                        found = first_offset_at_or_after(
                            segment.read_at(pos, header.size),
                            timestamp_ms,
                            self.inflate_limit,
                            self._start,
                        )
                    except CorruptBatch as e:
                        raise KafkaError(ErrorCode.corrupt_message, str(e)) from None
                    if found is not None:
                        return found
        return None

    def max_timestamp(self) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the batch with the largest timestamp (ListOffsets -3)."""
        best: tuple[int, int] | None = None
        for _, _, header in self._headers_from(self.log_start_offset):
            if not header.is_control and (best is None or header.max_timestamp > best[1]):
                best = (header.last_offset, header.max_timestamp)
        return best

    # -- retention and truncation ---------------------------------------------
    def apply_retention(self, now_ms: int, upper: int) -> int:
        """Deletes whole old segments: those wholly below the log start offset
        (whatever the cleanup policy, as Kafka), and with ``delete`` those past
        ``retention.ms``/``retention.bytes``; never the active one, never data at
        or above ``upper``, the high watermark. The log start offset follows the
        first segment left; returns how many were deleted."""
        policy = "delete" in self.config["cleanup.policy"]
        retention_ms, retention_bytes = self.config["retention.ms"], self.config["retention.bytes"]
        deleted = 0
        total = self.size
        while len(self.segments) > 1 and self.segments[1].base_offset <= upper:
            oldest = self.segments[0]
            below_start = self.segments[1].base_offset <= self._start
            expired = retention_ms >= 0 and 0 <= oldest.max_timestamp < now_ms - retention_ms
            oversize = retention_bytes >= 0 and total - oldest.size >= retention_bytes
            if not (below_start or (policy and (expired or oversize))):
                break
            total -= oldest.size
            self.segments.pop(0).delete()
            deleted += 1
        if deleted:
            fsync_dir(self.directory)
            self._start = max(self._start, self.segments[0].base_offset)
            self.epochs.truncate_from_start(self._start)
        return deleted

    def compact(self, now_ms: int, upper: int) -> CleanStats:
        """One compaction pass (``cleanup.policy`` with ``compact``) over the
        segments wholly below ``upper`` (the HW) and the last stable offset."""
        stats = CleanStats()
        if "compact" not in self.config["cleanup.policy"]:
            return stats
        unstable = self.producer_state.first_unsettled_offset(upper)
        limit = min(upper, self.segments[-1].base_offset, upper if unstable is None else unstable)
        cleanable = [s for s in self.segments[:-1] if s.next_offset <= limit]
        if not cleanable or cleanable[-1].next_offset <= self._cleaned_to:
            return stats  # nothing new became cleanable since the last pass
        self._cleaned_to = cleanable[-1].next_offset
        aborted = self.aborted_transactions(self.log_start_offset, limit)
        cleaner = Cleaner(
            cleanable, aborted, now_ms, self.config["delete.retention.ms"], self.inflate_limit
        )
        cleaner.build_map()
        for segment in cleanable:
            stats.bytes_before += segment.size
            data = cleaner.clean_segment(segment, stats)
            if data is not None:
                segment.replace(data)
                stats.segments += 1
            stats.bytes_after += segment.size
        return stats

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Empties the log and starts it at ``offset`` (Kafka's
        truncateFullyAndStartAt): a follower whose log ends before its
        leader's log start begins again where the leader's log starts."""
        self._reset_segments(offset)
        self.recovery_point = self._cleaned_to = offset
        self.epochs.truncate_from_end(0)
        self.producer_state.truncate_fully_and_start_at(offset)

    def _reset_segments(self, offset: int) -> None:
        """Deletes every segment; one empty segment starts the log at ``offset``."""
        for segment in self.segments:
            segment.delete()
        self.segments = [self._new_segment(offset)]
        self._start = offset

    def truncate_to(self, offset: int) -> None:
        """Removes every batch at or after ``offset`` (for replication's truncation).
        At or past the log end nothing is removed but the epochs that start
        there: a replica that led an epoch and appended nothing in it keeps an
        entry its next leader does not know, which it must drop (as Kafka's
        UnifiedLog.truncateTo does)."""
        if offset >= self.next_offset:
            self.epochs.truncate_from_end(self.next_offset)
            return
        while len(self.segments) > 1 and self.segments[-1].base_offset >= offset:
            self.segments.pop().delete()
        if self.segments[0].base_offset >= offset:
            self.segments.pop().delete()
            self.segments.append(self._new_segment(offset))
        else:
            self.segments[-1].truncate_to(offset)
        self._start = min(self._start, offset)
        self.recovery_point = min(self.recovery_point, offset)
        self._cleaned_to = min(self._cleaned_to, offset)
        self.epochs.truncate_from_end(offset)
        self.producer_state.truncate_and_reload(offset)
        self._rebuild_producer_state()
