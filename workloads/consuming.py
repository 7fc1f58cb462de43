"""A consumer that speaks in keys, remembers what it polled, and can roll back.

Wraps a confluent-kafka ``Consumer`` for the queue client: ``assign`` keeps
the position of keys it already had (as Java's ``assign`` does, unlike
librdkafka's), ``poll`` returns ``{key: [[offset, value], ...]}``, and
``rollback`` seeks every key polled in the current op back to the first
offset it returned there — what a user must do after a failed or unknown
transaction, since Kafka leaves the position after the aborted records
(KAFKA-17582).

librdkafka moves a position back on its own when a fetch is out of range
(``auto.offset.reset``): a stale leader cut off from the cluster answers a
position past its own log end that way. The consumer notices a record
below the position it tracks and logs the reset (``take_resets``), so a
rewind the client did not ask for is in the history, not silent.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as TP

from workloads.keys import KeyMap

log = logging.getLogger(__name__)

MAX_RECORDS = 500
LEAVE_S = 5.0  # how long a replaced group member may take to leave
FIRST_OFFSET = 0


def consume_ready(consumer: Any, timeout_s: float) -> list[Any]:
    """The records fetched so far, or else the first to come within
    ``timeout_s`` with any fetched beside it: the Java consumer's ``poll``,
    which Jepsen's workload calls. librdkafka's ``consume(n, timeout)`` waits
    for n records, so a poll of a log growing slower than that would always
    take its whole timeout. End-of-partition events come along but end no
    wait: a poll holding only them waits on for records of other keys."""
    got = consumer.consume(MAX_RECORDS, 0)
    deadline = time.monotonic() + timeout_s
    while not any(_record_or_error(m) for m in got):
        more = consumer.consume(1, max(0.0, deadline - time.monotonic()))
        if not more:
            break
        got += more + consumer.consume(MAX_RECORDS - 1, 0)
    return got


def _record_or_error(msg: Any) -> bool:
    err = msg.error()
    return err is None or err.code() != KafkaError._PARTITION_EOF


class KeyConsumer:
    """One process's consumer."""

    def __init__(self, config: dict[str, Any], key_map: KeyMap, start: int = FIRST_OFFSET) -> None:
        self.config = config
        self.key_map = key_map
        self._new_consumer()
        self.start = start  # where newly assigned keys begin (unless from the beginning)
        self.assigned: list[int] = []
        self.subscribed = False
        self.first_polled: dict[int, int] = {}
        # Each assigned key's next offset, tracked here rather than asked of
        # librdkafka, and a new assignment goes to a fresh consumer: position,
        # assign and seek hold the GIL, and on a consumer caught in librdkafka's
        # lock-order deadlock around a leader failure (OffsetForLeaderEpoch
        # re-querying the leader, librdkafka issue 5476) they froze every thread
        # of the run. A deadlocked consumer is only ever closed, off the GIL.
        self.positions: dict[int, int] = {}
        self._used = False  # assigned or subscribed since it was created
        self._leaving: dict[int, threading.Event] = {}  # replaced group members
        self._closing: list[threading.Thread] = []  # consumers being closed
        self.rebalance_log: list[dict[str, Any]] = []
        self.resets: list[dict[str, int]] = []
        self.at_end: dict[int, int] = {}  # key → the end offset its consumer reached
        self._lock = threading.Lock()

    def begin_op(self) -> None:
        """Starts tracking the first offset polled per key for a rollback."""
        self.first_polled = {}

    def assign(self, keys: list[int], from_beginning: bool) -> None:
        kept = self.positions if not from_beginning and not self.subscribed else {}
        # Newly assigned keys start at the beginning: assign-mode consumers
        # commit nothing, so Kafka's "committed, else earliest" is the same
        # thing without asking a group coordinator. Offset 0 *is* the
        # beginning of jepka's fresh topics and needs no ListOffsets round
        # trip; were the log start later, auto.offset.reset=earliest applies.
        start = FIRST_OFFSET if from_beginning else self.start
        # (A fresh consumer also leaves a group at once: librdkafka's unsubscribe
        # is asynchronous, and the revoke it triggers would arrive on a later
        # poll and unassign whatever was assigned in between.)
        self._assign_fresh({k: kept.get(k, start) for k in keys})
        self.subscribed = False

    def _assign_fresh(self, positions: dict[int, int]) -> None:
        """Assigns ``positions`` to a consumer that has never been assigned or
        subscribed: this one if so, else a new one."""
        self._replace_if_used()
        self._used = True
        self.at_end = {}
        self.positions = dict(positions)
        self.consumer.assign(
            [TP(*self.key_map.topic_partition(k), o) for k, o in positions.items()]
        )
        self.assigned = list(positions)

    def subscribe(self, keys: list[int]) -> None:
        """Subscribes to the topics of ``keys``; rebalances are logged as
        ``{"type": "assigned"|"revoked", "keys": [...]}`` for the next op."""
        if not self.subscribed:
            self._replace_if_used()  # a manual assignment must go before joining a group
        self._used = True
        self.consumer.subscribe(
            self.key_map.topics(keys),
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_revoke,
        )
        self.subscribed = True
        self.assigned = []
        self.positions = {}

    def _new_consumer(self) -> None:
        """A fresh librdkafka consumer, and its group metadata while it is
        healthy (see ``group_metadata``)."""
        self.consumer = Consumer(self.config)
        self._assigned_metadata = self.consumer.consumer_group_metadata()

    def _replace_if_used(self) -> None:
        if self._used:
            old = self.consumer
            self._new_consumer()
            self._close_in_background(old, self.subscribed)
            self._used = False

    def _log(self, kind: str, partitions: list[TP]) -> None:
        keys = sorted(self.key_map.key_of(tp.topic, tp.partition) for tp in partitions)
        with self._lock:
            self.rebalance_log.append({"type": kind, "keys": keys})

    def _on_assign(self, consumer: Consumer, partitions: list[TP]) -> None:
        self._log("assigned", partitions)
        for p in partitions:  # a group member resumes where the group committed
            self.positions.pop(self.key_map.key_of(p.topic, p.partition), None)
        self.assigned = sorted(
            set(self.assigned) | {self.key_map.key_of(p.topic, p.partition) for p in partitions}
        )

    def _on_revoke(self, consumer: Consumer, partitions: list[TP]) -> None:
        self._log("revoked", partitions)
        left = self._leaving.get(id(consumer))
        if left is not None:  # a replaced consumer leaving its group
            left.set()
            return
        gone = {self.key_map.key_of(p.topic, p.partition) for p in partitions}
        self.assigned = [k for k in self.assigned if k not in gone]

    def take_rebalance_log(self) -> list[dict[str, Any]]:
        with self._lock:
            out, self.rebalance_log = self.rebalance_log, []
        return out

    def take_resets(self) -> list[dict[str, int]]:
        """The position resets seen since the last call, as ``{key, from, to}``:
        the record ``to`` came where ``from`` was expected."""
        out, self.resets = self.resets, []
        return out

    def ends(self) -> dict[str, list[int]]:
        """``{key: [end, high watermark]}`` for each key whose partition end
        this consumer has reached and read nothing past since: it has read
        everything below ``end`` (the high watermark, or the last stable
        offset when read_committed); the high watermark is the latest a
        fetch answered (librdkafka's cached one), so a transaction still
        open below it shows as an end below the high watermark."""
        out = {}
        for key, end in sorted(self.at_end.items()):
            topic, partition = self.key_map.topic_partition(key)
            _, high = self.consumer.get_watermark_offsets(TP(topic, partition), cached=True)
            out[str(key)] = [end, high]
        return out

    def poll(self, timeout_s: float) -> dict[int, list[list[int]]]:
        """What has come, as ``{key: [[offset, value], ...]}``; a record error
        raises ``KafkaException``."""
        out: dict[int, list[list[int]]] = {}
        for msg in consume_ready(self.consumer, timeout_s):
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    self.at_end[self.key_map.key_of(msg.topic(), msg.partition())] = msg.offset()
                    continue
                raise KafkaException(err)
            key = self.key_map.key_of(msg.topic(), msg.partition())
            offset = msg.offset()
            raw = msg.value()
            try:
                value = int(raw)
            except (TypeError, ValueError):
                raise ValueError(
                    f"key {key} offset {offset}: value {raw!r} is not an integer"
                ) from None
            expected = self.positions.get(key, -1)
            if 0 <= offset < expected:
                self.resets.append({"key": key, "from": expected, "to": offset})
            out.setdefault(key, []).append([offset, value])
            self.at_end.pop(key, None)
            self.first_polled.setdefault(key, offset)
            self.positions[key] = offset + 1
        return out

    def next_offsets(self, polled: dict[int, list[list[int]]]) -> list[TP]:
        """Offsets to commit after ``polled``: the highest offset read + 1 per key."""
        return [
            TP(*self.key_map.topic_partition(k), max(o for o, _ in recs) + 1)
            for k, recs in sorted(polled.items())
            if recs
        ]

    def group_metadata(self) -> Any:
        """What ``send_offsets_to_transaction`` needs with the offsets. An
        assigned consumer's is fixed (its group, no generation, no member), so it
        is taken when the consumer is created: the call holds the GIL while it
        waits for librdkafka's main thread, which a consumer caught in the
        deadlock above never answers (it froze a txn run). A subscribed member's
        changes with every rebalance, so it is asked each time."""
        if self.subscribed:
            return self.consumer.consumer_group_metadata()
        return self._assigned_metadata

    def member_id(self) -> str | None:
        """This consumer's group member id, when it has joined a group."""
        try:
            return self.consumer.memberid() or None
        except (KafkaException, RuntimeError):
            return None

    def commit(self, polled: dict[int, list[list[int]]]) -> None:
        offsets = self.next_offsets(polled)
        if offsets:
            self.consumer.commit(offsets=offsets, asynchronous=False)

    def rollback(self) -> None:
        """Moves each key polled since ``begin_op`` back to its first offset: a
        fresh consumer when assigned, a seek within the group when subscribed."""
        if not self.subscribed:
            if self.first_polled:
                self._assign_fresh({**self.positions, **self.first_polled})
            self.first_polled = {}
            return
        for key, offset in sorted(self.first_polled.items()):
            try:
                self.consumer.seek(TP(*self.key_map.topic_partition(key), offset))
            except KafkaException as e:
                log.warning("could not roll key %s back to %s: %s", key, offset, e)
                self.positions.pop(key, None)
            else:
                self.positions[key] = offset
        self.first_polled = {}

    def close(self, timeout_s: float = 5.0) -> None:
        """Closes the consumer, then waits at most ``timeout_s`` in all until
        it and every consumer it replaced are closed; this object is not to be
        used after. It lets go of its consumer, whose rebalance callbacks refer
        back here: otherwise one destroyed unclosed (below) would wait for the
        cyclic GC."""
        consumer = self.consumer
        del self.consumer
        self._close_in_background(consumer, self.subscribed)
        deadline = time.monotonic() + timeout_s
        for t in self._closing:
            t.join(max(0.0, deadline - time.monotonic()))

    def _close_in_background(self, consumer: Consumer, grouped: bool) -> None:
        """Closes a consumer on a daemon thread (``close`` waits for it, up to
        a limit): a consumer leaving its group can block on a partitioned
        coordinator, and a dead process must not hang the run.

        A group member first leaves its group while polling, so that its revoke
        is served there: a revoke served inside ``close`` makes confluent-kafka
        call ``rd_kafka_assign`` with the GIL held, and that call can hang for
        good (librdkafka issue 4884), freezing every thread of the run. A member
        whose revoke does not come within ``LEAVE_S`` is not closed but
        destroyed once its last reference goes: the destructor skips the group
        leave and every callback."""
        left = threading.Event()
        if grouped:
            self._leaving[id(consumer)] = left

        def close() -> None:
            try:
                if grouped:
                    consumer.unsubscribe()
                    deadline = time.monotonic() + LEAVE_S
                    while not left.is_set() and time.monotonic() < deadline:
                        consumer.consume(MAX_RECORDS, 0.1)
                    if not left.is_set():
                        log.warning("a group consumer never left its group; destroyed unclosed")
                        return
                consumer.close()
            except (KafkaException, RuntimeError) as e:
                log.debug("consumer close: %s", e)
            finally:
                self._leaving.pop(id(consumer), None)

        t = threading.Thread(target=close, daemon=True, name="jepka-consumer-close")
        self._closing = [*(c for c in self._closing if c.is_alive()), t]
        t.start()
