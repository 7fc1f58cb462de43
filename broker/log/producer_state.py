"""Per-partition producer state: idempotence and open transactions (Kafka's
``ProducerStateManager``).

For every producer id the partition remembers the epoch, the last five
batches' sequence and offset ranges (the dedup window), the coordinator epoch
and the first offset of its open transaction. Validation follows Kafka's
``ProducerAppendInfo`` so clients see the error codes they expect. The state is
snapshotted to ``<offset>.snapshot`` files and, on restart, rebuilt from the
newest snapshot plus the log after it, so dedup survives a crash.
"""

from __future__ import annotations

import json
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from broker import bugs
from broker.errors import ErrorCode, KafkaError
from broker.log.batch import CONTROL_ABORT, INT32_MAX, BatchHeader
from broker.log.ledger import FsyncLedger
from broker.log.segment import file_stem

DEDUP_WINDOW = 5
SNAPSHOT_SUFFIX = ".snapshot"
NO_EPOCH = -1


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int = NO_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=DEDUP_WINDOW))
    coordinator_epoch: int = -1
    txn_first_offset: int | None = None
    last_timestamp: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        if header.producer_epoch != self.epoch:
            return None
        for meta in self.batches:
            if meta.first_seq == header.base_sequence and meta.last_seq == header.last_sequence:
                return meta
        return None

    def to_json(self) -> dict:
        return {
            "pid": self.producer_id,
            "epoch": self.epoch,
            "batches": [_meta_list(b) for b in self.batches],
            "coordinator_epoch": self.coordinator_epoch,
            "txn_first_offset": self.txn_first_offset,
            "last_timestamp": self.last_timestamp,
        }

    @classmethod
    def from_json(cls, data: dict) -> ProducerEntry:
        entry = cls(int(data["pid"]), int(data["epoch"]))
        entry.batches.extend(BatchMetadata(*map(int, b)) for b in data["batches"])
        entry.coordinator_epoch = int(data["coordinator_epoch"])
        first = data["txn_first_offset"]
        entry.txn_first_offset = None if first is None else int(first)
        entry.last_timestamp = int(data["last_timestamp"])
        return entry


def _meta_list(meta: BatchMetadata) -> list[int]:
    return [meta.first_seq, meta.last_seq, meta.first_offset, meta.last_offset, meta.timestamp]


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


def _check_sequence(entry: ProducerEntry, header: BatchHeader) -> None:
    """A client batch that is not a duplicate must follow the producer's last one."""
    if header.producer_epoch != entry.epoch:
        if header.base_sequence != 0 and entry.epoch != NO_EPOCH:
            raise KafkaError(
                ErrorCode.out_of_order_sequence_number,
                f"sequence {header.base_sequence} for a new epoch {header.producer_epoch}",
            )
    elif entry.batches and not _in_sequence(entry.last_seq, header.base_sequence):
        raise KafkaError(
            ErrorCode.out_of_order_sequence_number,
            f"pid {header.producer_id}: seq {header.base_sequence} after {entry.last_seq}",
        )


class VerificationGuard:
    """A transactional write may be appended after its verification only while
    its guard (compared by identity) is still the producer's, i.e. no marker
    for the producer landed while the coordinator was asked. Guards no marker
    cleared expire as idle producers do."""

    __slots__ = ("created_ms",)

    def __init__(self) -> None:
        self.created_ms = int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


class ProducerStateManager:
    def __init__(self, directory: Path, ledger: FsyncLedger) -> None:
        self.directory = directory
        self.ledger = ledger
        self.producers: dict[int, ProducerEntry] = {}
        #: producer id -> the first offset of its open transaction (Kafka's
        #: ongoingTxns), so that every fetch finds the LSO without a scan
        self._open: dict[int, int] = {}
        self.map_end_offset = 0  # the state reflects the log below this offset
        #: producer id -> the guard of the transactional write being verified
        #: with its coordinator (Kafka's VerificationGuard); a marker clears it
        self.verifying: dict[int, VerificationGuard] = {}
        #: finished transactions whose marker is above the high watermark:
        #: first offset -> the marker's offset (Kafka's unreplicated transactions)
        self.unreplicated: dict[int, int] = {}

    # -- validation (before offsets are assigned) ------------------------------
    def check_append(self, header: BatchHeader, from_client: bool) -> BatchMetadata | None:
        """Validates a data batch; returns the original batch if it is a duplicate.

        Raises ``KafkaError`` with INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER
        or INVALID_TXN_STATE as Kafka's broker does for a client append.
        """
        entry = self.producers.get(header.producer_id)
        if entry is None:
            return None
        if header.producer_epoch < entry.epoch:
            raise KafkaError(
                ErrorCode.invalid_producer_epoch,
                f"producer {header.producer_id}: epoch {header.producer_epoch} < {entry.epoch}",
            )
        # with no-dedup there is no window of recent batches: a retry of one
        # already appended is out of sequence, and its producer resends it
        # under a bumped epoch, appended again
        duplicate = None if bugs.active("no-dedup") else entry.find_duplicate(header)
        if duplicate is not None:
            return duplicate
        if from_client and header.base_sequence >= 0:
            _check_sequence(entry, header)
        if from_client and not header.is_transactional and entry.txn_first_offset is not None:
            raise KafkaError(
                ErrorCode.invalid_txn_state, "non-transactional batch inside an open transaction"
            )
        return None

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        entry = self.producers.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.epoch:
            raise KafkaError(
                ErrorCode.producer_fenced, f"marker epoch {producer_epoch} < {entry.epoch}"
            )
        if coordinator_epoch < entry.coordinator_epoch:
            raise KafkaError(
                ErrorCode.transaction_coordinator_fenced,
                f"coordinator epoch {coordinator_epoch} < {entry.coordinator_epoch}",
            )

    # -- updates (after offsets are assigned, and when replaying the log) -------
    def update(self, header: BatchHeader, control_type: int | None = None) -> CompletedTxn | None:
        """Applies a stamped batch; returns the transaction a marker completes."""
        if not header.has_producer_id:
            self.map_end_offset = header.next_offset
            return None
        entry = self.producers.setdefault(header.producer_id, ProducerEntry(header.producer_id))
        if header.producer_epoch != entry.epoch:
            entry.batches.clear()
            entry.epoch = header.producer_epoch
        entry.last_timestamp = header.max_timestamp
        self.map_end_offset = header.next_offset
        if header.is_control:
            return self._complete(entry, header, control_type)
        if header.base_sequence >= 0:
            entry.batches.append(
                BatchMetadata(
                    header.base_sequence,
                    header.last_sequence,
                    header.base_offset,
                    header.last_offset,
                    header.max_timestamp,
                )
            )
        if header.is_transactional and entry.txn_first_offset is None:
            entry.txn_first_offset = self._open[entry.producer_id] = header.base_offset
        return None

    def _complete(
        self, entry: ProducerEntry, header: BatchHeader, control_type: int | None
    ) -> CompletedTxn | None:
        first = entry.txn_first_offset
        entry.txn_first_offset = None
        self._open.pop(entry.producer_id, None)
        self.verifying.pop(entry.producer_id, None)
        if first is None:
            return None
        self.unreplicated[first] = header.base_offset
        return CompletedTxn(
            entry.producer_id, first, header.base_offset, control_type == CONTROL_ABORT
        )

    def remove_expired(self, now_ms: int, max_idle_ms: int) -> int:
        """Forgets producers idle past ``producer.id.expiration.ms`` with no open
        transaction, as Kafka does; their next batch starts a fresh entry."""
        expired = [
            pid
            for pid, e in self.producers.items()
            if e.txn_first_offset is None and e.last_timestamp < now_ms - max_idle_ms
        ]
        for pid in expired:
            del self.producers[pid]
        self.verifying = {
            pid: guard
            for pid, guard in self.verifying.items()
            if guard.created_ms >= now_ms - max_idle_ms
        }
        return len(expired)

    def set_coordinator_epoch(self, producer_id: int, coordinator_epoch: int) -> None:
        self.producers[producer_id].coordinator_epoch = coordinator_epoch

    def start_verification(self, producer_id: int) -> VerificationGuard:
        """The producer's guard, made if none is pending (concurrent writes of
        one transaction share it, as in Kafka)."""
        return self.verifying.setdefault(producer_id, VerificationGuard())

    def replace_producers(self, producers: dict[int, ProducerEntry]) -> None:
        """Takes ``producers`` as the whole state, their open transactions with it."""
        self.producers = producers
        self._open = {
            pid: e.txn_first_offset
            for pid, e in producers.items()
            if e.txn_first_offset is not None
        }

    def first_unstable_offset(self) -> int | None:
        """The first offset of an open transaction, if any."""
        return min(self._open.values()) if self._open else None

    def first_unsettled_offset(self, high_watermark: int) -> int | None:
        """Where the last stable offset stops: the first offset of an open
        transaction, or of a finished one whose marker is not below the HW
        yet, so a read_committed reader never sees a transaction's data before
        its outcome is as safe as the data (Kafka's firstUnstableOffset)."""
        first = self.first_unstable_offset()
        for start, marker in self.unreplicated.items():
            if marker >= high_watermark and (first is None or start < first):
                first = start
        return first

    def on_high_watermark(self, high_watermark: int) -> None:
        """Forgets the finished transactions whose marker is below the HW."""
        if not self.unreplicated:
            return
        self.unreplicated = {
            first: marker for first, marker in self.unreplicated.items() if marker >= high_watermark
        }

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Forgets everything: the log now starts empty at ``offset``."""
        for path in self._snapshot_files():
            path.unlink()
        self.replace_producers({})
        self.unreplicated.clear()
        self.verifying.clear()
        self.map_end_offset = offset

    def truncate_and_reload(self, offset: int) -> None:
        """Forgets state above ``offset``: drops later snapshots and reloads the newest
        one at or below it (the caller replays the log from ``map_end_offset``)."""
        for path in self._snapshot_files():
            if int(path.stem) > offset:
                path.unlink()
        self.replace_producers({})
        self.unreplicated.clear()
        self.verifying.clear()
        self.map_end_offset = 0
        self.load_latest()

    # -- snapshots -------------------------------------------------------------
    def _snapshot_files(self) -> list[Path]:
        return sorted(
            (p for p in self.directory.glob(f"*{SNAPSHOT_SUFFIX}") if p.stem.isdigit()),
            key=lambda p: int(p.stem),
        )

    def take_snapshot(self) -> None:
        """Writes the state at ``map_end_offset`` durably; keeps the two newest.
        Nothing to write for an empty log or when that snapshot exists already."""
        path = self.directory / f"{file_stem(self.map_end_offset)}{SNAPSHOT_SUFFIX}"
        if self.map_end_offset == 0 or path.exists():
            return
        data = {
            "end_offset": self.map_end_offset,
            "producers": [e.to_json() for e in self.producers.values()],
        }
        self.ledger.write_atomically(path, json.dumps(data).encode())
        for old in self._snapshot_files()[:-2]:
            old.unlink()

    def load_latest(self, below: int | None = None) -> None:
        """Loads the newest readable snapshot (at or below ``below``); unreadable
        ones (torn by a power loss) are skipped and removed."""
        for path in reversed(self._snapshot_files()):
            if below is not None and int(path.stem) > below:
                path.unlink()
                continue
            try:
                data = json.loads(path.read_bytes())
                producers = {int(e["pid"]): ProducerEntry.from_json(e) for e in data["producers"]}
                end = int(data["end_offset"])
            except (OSError, ValueError, KeyError, TypeError):
                path.unlink()
                continue
            self.replace_producers(producers)
            self.map_end_offset = end
            return
        self.replace_producers({})
        self.map_end_offset = 0
