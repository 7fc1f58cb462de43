"""The Kafka client for the queue-family workloads, on confluent-kafka.

One :class:`QueueClient` per process holds a producer and a consumer and
applies ops whose values are micro-op lists (docs/architecture.md,
"Formats"): ``send``, ``poll`` and ``txn`` ops, plus ``assign``, ``subscribe``
and ``crash``. With ``transactional`` set, every queue op runs in a Kafka
transaction that also commits the consumer's offsets
(``send_offsets_to_transaction``); an op may carry ``abort`` (chosen by
the seeded generator) to abort on purpose after its micro-ops instead of
committing.

How each outcome is classified is in ``workloads.outcomes``; this module
only decides *which* error stands for the op, and always keeps what it
learned (offsets of delivered sends, records polled) in the completion,
whatever its type.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from workloads.config import ClientConfig
from workloads.consuming import KeyConsumer
from workloads.handles import close_producer
from workloads.keys import sent_keys
from workloads.outcomes import (
    ClientCrash,
    IntentionalAbort,
    Outcome,
    classify,
    classify_delivery,
    classify_txn,
    is_abortable,
)
from workloads.topics import KeyTopics, TopicsNotCreated, named

log = logging.getLogger(__name__)

OpDict = dict[str, Any]


def completion(op: OpDict, value: Any, outcome: Outcome | None) -> OpDict:
    """The completion of ``op`` with ``value``: ok, or as ``outcome`` says."""
    if outcome is None:
        return {**op, "type": "ok", "value": value}
    done = {**op, "type": outcome.type, "value": value, "error": outcome.error}
    if outcome.end_process:
        done["end_process"] = True
    return done


class QueueClient:
    """A producer and a consumer for one process (the ``Client`` protocol)."""

    def __init__(
        self, config: ClientConfig, process: Any = None, topics: KeyTopics | None = None
    ) -> None:
        self.config = config
        self.process = process
        #: the run's topics, shared by every process's client
        self.topics = topics if topics is not None else KeyTopics(config)
        self.producer: Producer | None = None
        self.consumer: KeyConsumer | None = None

    # -- lifecycle -----------------------------------------------------------------

    def open(self, test: Any, node: str) -> QueueClient:
        client = QueueClient(self.config, process=os.urandom(4).hex(), topics=self.topics)
        try:
            client.producer = Producer(self.config.producer_conf(client.process))
            if self.config.transactional:
                client.producer.init_transactions(self.config.op_timeout_s)
            client.consumer = KeyConsumer(self.config.consumer_conf(), self.config.key_map)
        except BaseException:
            client.close(test)
            raise
        return client

    def setup(self, test: Any) -> None:
        """Creates the first keys' topics and waits until each partition has a
        leader; topics that existed already and differ from what the test
        asks are logged and recorded in the test as ``existing_topics``."""
        differing = self.topics.setup()
        for topic, problem in differing.items():
            log.warning("topic %s existed already: %s", topic, problem)
        if differing and isinstance(test, dict):
            test["existing_topics"] = differing

    def teardown(self, test: Any) -> None:
        pass

    def close(self, test: Any) -> None:
        if self.producer is not None:
            close_producer(self.producer)
            self.producer = None
        if self.consumer is not None:
            self.consumer.close()
            self.consumer = None

    # -- ops -----------------------------------------------------------------------

    def invoke(self, test: Any, op: OpDict) -> OpDict:
        assert self.producer is not None and self.consumer is not None, "invoke before open"
        f = op["f"]
        if f == "crash":
            return completion(op, op.get("value"), classify(ClientCrash()))
        if f not in ("assign", "subscribe", "send", "poll", "txn"):
            raise ValueError(f"queue client cannot apply f={f!r}")
        if f in ("assign", "subscribe"):
            return self._reassign(op)
        try:
            self.topics.require(sent_keys(op["value"]))
        except TopicsNotCreated as e:  # nothing of the op was done
            return completion(op, op["value"], Outcome("fail", f"topics-not-created: {e}"))
        self.consumer.begin_op()
        # Final reads (``final``) are plain read_committed polls even in
        # transactional workloads: they only observe, and must not depend on
        # a transaction coordinator still recovering from the faults.
        transactional = self.config.transactional and not op.get("final")
        return self._settle(self._txn(op) if transactional else self._plain(op))

    def _settle(self, done: OpDict) -> OpDict:
        """Rolls the consumer back unless ``done`` is ok; returns ``done`` with
        the rebalances and offset resets its consumer saw, and for a final
        read the partition ends it has reached (with the producers'
        transaction timeout, which bounds how long an end may stay below the
        high watermark)."""
        assert self.consumer is not None
        if done["type"] != "ok":
            self.consumer.rollback()
        rebalances = self.consumer.take_rebalance_log()
        if rebalances:
            done["rebalance_log"] = rebalances
        resets = self.consumer.take_resets()
        if resets:
            done["offset_resets"] = resets
        if done.get("final") and (ends := self.consumer.ends()):
            done["ends"] = ends
            if (timeout := self.config.txn_timeout_ms) is not None:
                done["txn_timeout_ms"] = timeout
        return done

    def _reassign(self, op: OpDict) -> OpDict:
        """Puts the consumer on the op's keys whose topics exist or can be
        created now (the completion names them): a key whose topic cannot be
        made yet was never written, and a consumer assigned a partition that
        does not exist gets errors, not records. With none of them, the op
        fails and the consumer stays as it was."""
        assert self.consumer is not None
        refused = self.topics.create(list(op["value"]))
        key_map = self.config.key_map
        keys = [k for k in op["value"] if key_map.topic_partition(k)[0] not in refused]
        if not keys:
            return completion(
                op, op["value"], Outcome("fail", f"topics-not-created: {named(refused)}")
            )
        try:
            if op["f"] == "assign":
                self.consumer.assign(keys, bool(op.get("seek_to_beginning")))
            else:
                self.consumer.subscribe(keys)
        except KafkaException as e:
            return completion(op, keys, classify(e))
        return completion(op, keys, None)

    def _plain(self, op: OpDict) -> OpDict:
        """Sends and polls without a transaction: each send is delivered (or
        not) on its own, so one failed send among delivered ones is ``info``."""
        results: list[Any] = []
        sends: dict[int, list[Any]] = {}
        error: Outcome | None = None
        try:
            for i, mop in enumerate(op["value"]):
                if mop[0] == "send":
                    sends[i] = self._produce(mop)
                    results.append(None)
                else:
                    results.append(["poll", self._poll(op)])
            self._flush()
        except (KafkaException, BufferError, TimeoutError, ValueError) as e:
            error = classify(e)
        outcomes = self._fill_sends(op["value"], results, sends)
        commit = None
        if self.consumer is not None and self.consumer.subscribed and error is None:
            commit = self._commit(_merged_polls(results))
        done = completion(op, results, _combine(error, list(outcomes.values())))
        refused = [i for i, o in outcomes.items() if o is not None and o.type == "fail"]
        if refused and done["type"] == "info":
            done["refused"] = refused  # certainly not written, though others may be
        if commit is not None:
            done["commit"] = commit
        return done

    def _commit(self, polled: dict[int, list[list[int]]]) -> dict[str, Any] | None:
        """Commits a group member's polled offsets (Jepsen's ``commitSync``);
        returns what was committed and how it ended, for the group checks
        (committed offsets never go backwards). The reads stand either way."""
        assert self.consumer is not None
        if not polled:
            return None
        record: dict[str, Any] = {
            "offsets": {str(k): max(o for o, _ in recs) + 1 for k, recs in polled.items() if recs},
            "member": self.consumer.member_id(),
        }
        try:
            self.consumer.commit(polled)
        except KafkaException as e:
            outcome = classify(e)
            record.update(type=outcome.type, error=outcome.error)
        else:
            record["type"] = "ok"
        return record

    def _txn(self, op: OpDict) -> OpDict:
        """The op as one transaction: ok if the commit was acknowledged, fail
        if it was certainly aborted, info otherwise."""
        assert self.producer is not None
        results: list[Any] = []
        sends: dict[int, list[Any]] = {}
        failure: Outcome | None = None
        abortable = False
        try:
            self.producer.begin_transaction()
            for i, mop in enumerate(op["value"]):
                if mop[0] == "send":
                    sends[i] = self._produce(mop)
                    results.append(None)
                else:
                    results.append(["poll", self._poll(op)])
            if op.get("abort"):
                # as Jepsen's client, which waits for each send: the records
                # reach the log, so the abort leaves something to hide (the
                # abort itself waits out any send still in flight)
                self.producer.flush(self.config.op_timeout_s)
                raise IntentionalAbort()
            self._commit_with_offsets(_merged_polls(results))
        except IntentionalAbort:
            failure, abortable = Outcome("fail", "intentional-abort"), True
        except (KafkaException, BufferError, TimeoutError, ValueError) as e:
            failure, abortable = classify_txn(e), is_abortable(e)
        self._fill_sends(op["value"], results, sends)
        if failure is None:
            return completion(op, results, None)
        return completion(op, results, self._end_failed(failure, abortable))

    def _commit_with_offsets(self, polled: dict[int, list[list[int]]]) -> None:
        """Commits the open transaction together with the consumer's offsets past
        ``polled``, so what it read counts as consumed exactly when its sends commit."""
        assert self.producer is not None and self.consumer is not None
        timeout = self.config.op_timeout_s
        if polled:
            self.producer.send_offsets_to_transaction(
                self.consumer.next_offsets(polled), self.consumer.group_metadata(), timeout
            )
        self.producer.commit_transaction(timeout)

    def _end_failed(self, failure: Outcome, abortable: bool) -> Outcome:
        """How a failed transaction ends: aborted if it asks for that, and
        ``info`` unless certainly aborted (a definite refusal of one call does
        not make the transaction definite). Called after the ``except`` block:
        see ``workloads.handles`` on calls made while handling an exception."""
        if abortable:
            return self._abort(failure.error)
        if failure.type == "fail" and not failure.end_process:
            return Outcome("info", failure.error)
        return failure

    def _abort(self, cause: str) -> Outcome:
        """Aborts the open transaction: ``fail`` if Kafka acknowledged the
        abort, else ``info`` and a new process."""
        assert self.producer is not None
        try:
            self.producer.abort_transaction(self.config.op_timeout_s)
        except KafkaException as e:
            why = classify(e).error
            return Outcome("info", f"{cause}; abort failed: {why}", end_process=True)
        return Outcome("fail", cause)

    def _produce(self, mop: list[Any]) -> list[Any]:
        """Enqueues one send; the returned cell gets ``[error, offset]`` on delivery."""
        assert self.producer is not None
        _, key, value = mop
        topic, partition = self.config.key_map.topic_partition(key)
        cell: list[Any] = [None, None, False]

        def delivered(err: KafkaError | None, msg: Any) -> None:
            cell[0], cell[1], cell[2] = err, (msg.offset() if err is None else None), True

        self.producer.produce(
            topic, value=str(value).encode(), partition=partition, on_delivery=delivered
        )
        self.producer.poll(0)
        return cell

    def _flush(self) -> None:
        assert self.producer is not None
        left = self.producer.flush(self.config.op_timeout_s)
        if left:
            raise TimeoutError(f"{left} message(s) undelivered after {self.config.op_timeout_s}s")

    def _poll(self, op: OpDict) -> dict[int, list[list[int]]]:
        assert self.consumer is not None
        return self.consumer.poll(op.get("poll_ms", self.config.poll_s * 1000) / 1000)

    def _fill_sends(
        self, mops: list[Any], results: list[Any], sends: dict[int, list[Any]]
    ) -> dict[int, Outcome | None]:
        """Puts each send's ``[offset, value]`` into ``results`` (offset None
        if unknown; micro-ops never reached keep their invocation form) and
        returns each delivery's outcome by micro-op index."""
        outcomes: dict[int, Outcome | None] = {}
        for i, mop in enumerate(mops):
            if i >= len(results):
                results.append(mop)
            elif i in sends:
                err, offset, done = sends[i]
                results[i] = ["send", mop[1], [offset, mop[2]]]
                if not done:
                    outcomes[i] = Outcome("info", "undelivered")
                elif err is not None:
                    outcomes[i] = classify_delivery(err)
                else:
                    outcomes[i] = None
        return outcomes


def _merged_polls(results: list[Any]) -> dict[int, list[list[int]]]:
    merged: dict[int, list[list[int]]] = {}
    for r in results:
        if r and r[0] == "poll" and len(r) == 2:
            for k, recs in r[1].items():
                merged.setdefault(k, []).extend(recs)
    return merged


def _combine(error: Outcome | None, sends: list[Outcome | None]) -> Outcome | None:
    """One outcome for a non-transactional op: a definite failure only if
    nothing in it can have taken effect."""
    failed = [o for o in sends if o is not None]
    if error is None and not failed:
        return None
    delivered = len(sends) - len(failed)
    candidates = ([error] if error else []) + failed
    if all(o.type == "fail" for o in candidates) and delivered == 0:
        end = any(o.end_process for o in candidates)
        return Outcome("fail", candidates[0].error, end)
    info = next((o for o in candidates if o.type == "info"), candidates[0])
    return Outcome("info", info.error, any(o.end_process for o in candidates))
