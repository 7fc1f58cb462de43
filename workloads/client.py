"""The Kafka client for the queue-family workloads, on confluent-kafka.

One :class:`QueueClient` per process holds a producer and a consumer and
applies ops whose values are micro-op lists (docs/architecture.md,
"Formats"): ``send``, ``poll`` and ``txn`` ops, plus ``assign``, ``subscribe``
and ``crash``. With ``transactional`` set, every queue op runs in a Kafka
transaction that also commits the consumer's offsets
(``send_offsets_to_transaction``); an op may carry ``abort_at`` (chosen by
the seeded generator) to abort on purpose after that many micro-ops.

How each outcome is classified is in ``workloads.outcomes``; this module
only decides *which* error stands for the op, and always keeps what it
learned (offsets of delivered sends, records polled) in the completion,
whatever its type.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import NewTopic

from workloads.consuming import KeyConsumer
from workloads.handles import Clients, close_producer
from workloads.keys import PARTITIONS_PER_TOPIC, KeyMap
from workloads.outcomes import (
    ClientCrash,
    IntentionalAbort,
    Outcome,
    classify,
    classify_delivery,
    classify_txn,
    is_abortable,
)

# librdkafka's own log lines go to logging, not straight to stderr. Under
# faults they are expected noise (refused connections...): what matters is in
# the history, so they are hidden unless JEPKA_LIBRDKAFKA_LOG names a level.
log = logging.getLogger(__name__)
LIBRDKAFKA_LOG = logging.getLogger("librdkafka")
LIBRDKAFKA_LOG.setLevel(os.environ.get("JEPKA_LIBRDKAFKA_LOG", "CRITICAL"))

OpDict = dict[str, Any]


@dataclass(frozen=True)
class ClientConfig:
    """Everything a client needs to connect, from the test spec."""

    bootstrap: str
    keys: tuple[int, ...]
    acks: str = "all"
    idempotence: bool = True
    isolation_level: str = "read_committed"
    transactional: bool = False
    replication_factor: int = 1
    #: the topics' min.insync.replicas; None leaves it to the broker's default
    min_isr: int | None = None
    key_map: KeyMap = field(default_factory=KeyMap)
    group_id: str = "jepka"
    txn_id_prefix: str = "jepka-txn"
    op_timeout_s: float = 10.0
    poll_s: float = 0.1
    #: librdkafka properties for every producer, consumer and admin (SASL,
    #: TLS, timeouts), over jepka's own
    properties: Mapping[str, str] = field(default_factory=dict)

    @property
    def longest_op_s(self) -> float:
        """How long one client op may run before the harness records it as
        unknown: three client op timeouts, also the producers'
        ``transaction.timeout.ms``. A synchronous offset commit has no
        timeout of its own; one blocked that long waits for a coordinator
        the member's heartbeats cannot reach either, so its session
        (``session.timeout.ms`` below) has expired and a commit arriving later
        is refused (an old generation)."""
        return self.op_timeout_s * 3

    @property
    def txn_timeout_ms(self) -> int | None:
        """The producers' ``transaction.timeout.ms`` (jepka's, or the one the
        client properties set); None where they are not transactional."""
        if not self.transactional:
            return None
        return int(self.producer_conf(0)["transaction.timeout.ms"])

    def admin_conf(self) -> dict[str, Any]:
        return {"bootstrap.servers": self.bootstrap, "logger": LIBRDKAFKA_LOG, **self.properties}

    def producer_conf(self, process: Any) -> dict[str, Any]:
        conf = {
            "bootstrap.servers": self.bootstrap,
            "acks": self.acks,
            "enable.idempotence": self.idempotence or self.transactional,
            "linger.ms": 0,
            "message.timeout.ms": int(self.op_timeout_s * 1000 * 0.6),
            "request.timeout.ms": int(self.op_timeout_s * 1000 * 0.3),
            "socket.timeout.ms": int(self.op_timeout_s * 1000 * 0.5),
            "max.in.flight.requests.per.connection": 5,
            # A coordinator answers CONCURRENT_TRANSACTIONS while the previous
            # commit's markers are written, a few ms on a LAN. librdkafka asks
            # again after a fixed 20 ms for AddPartitionsToTxn, but for
            # AddOffsetsToTxn, EndTxn and produce retries after this backoff
            # (100 ms by default), doubling with jitter up to
            # retry.backoff.max.ms (1 s); it also starts the fast metadata
            # refresh after a leader change at this interval.
            "retry.backoff.ms": 20,
            "logger": LIBRDKAFKA_LOG,
        }
        if self.transactional:
            conf["transactional.id"] = f"{self.txn_id_prefix}-{process}"
            conf["transaction.timeout.ms"] = int(self.longest_op_s * 1000)
        return {**conf, **self.properties}

    def consumer_conf(self) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.bootstrap,
            "group.id": self.group_id,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": self.isolation_level,
            # the end of a partition is reported, so final reads know when
            # they are done (``ends`` of a completion)
            "enable.partition.eof": True,
            "socket.timeout.ms": int(self.op_timeout_s * 1000 * 0.5),
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 1000,
            "logger": LIBRDKAFKA_LOG,
            **self.properties,
        }


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

    def __init__(self, config: ClientConfig, process: Any = None) -> None:
        self.config = config
        self.process = process
        self.producer: Producer | None = None
        self.consumer: KeyConsumer | None = None

    # -- lifecycle -----------------------------------------------------------------

    def open(self, test: Any, node: str) -> QueueClient:
        client = QueueClient(self.config, process=os.urandom(4).hex())
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
        """Creates every key's topic and waits until each partition has a
        leader; topics that existed already and differ from what the test
        asks are logged and recorded in the test as ``existing_topics``."""
        differing = create_topics(self.config)
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
        if f in ("assign", "subscribe"):
            return self._reassign(op)
        if f not in ("send", "poll", "txn"):
            raise ValueError(f"queue client cannot apply f={f!r}")
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
        assert self.consumer is not None
        keys = list(op["value"])
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
        abort_at = op.get("abort_at")
        failure: Outcome | None = None
        abortable = False
        try:
            self.producer.begin_transaction()
            for i, mop in enumerate(op["value"]):
                if abort_at is not None and i == abort_at:
                    raise IntentionalAbort()
                if mop[0] == "send":
                    sends[i] = self._produce(mop)
                    results.append(None)
                else:
                    results.append(["poll", self._poll(op)])
            if abort_at is not None:
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


def create_topics(config: ClientConfig, timeout_s: float = 30.0) -> dict[str, str]:
    """Creates the topics for ``config.keys`` with the test's replication
    factor and min.insync.replicas and waits until every partition has a
    leader. Returns, for each topic that existed already with other
    settings, how it differs."""
    import time

    wanted = config.key_map.topics(config.keys)
    topic_config = {"min.insync.replicas": str(config.min_isr)} if config.min_isr else {}
    existed = []
    with Clients() as clients:
        admin = clients.admin(config.admin_conf())
        futures = admin.create_topics(
            [
                NewTopic(t, PARTITIONS_PER_TOPIC, config.replication_factor, config=topic_config)
                for t in wanted
            ],
            request_timeout=timeout_s,
        )
        for topic, fut in futures.items():
            try:
                fut.result(timeout_s)
            except KafkaException as e:
                if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise
                existed.append(topic)
        deadline = time.monotonic() + timeout_s
        while True:
            md = admin.list_topics(timeout=timeout_s)
            ready = all(
                t in md.topics
                and md.topics[t].error is None
                and len(md.topics[t].partitions) == PARTITIONS_PER_TOPIC
                and all(p.leader >= 0 for p in md.topics[t].partitions.values())
                for t in wanted
            )
            if ready:
                return _differences(admin, md, existed, config, timeout_s)
            if time.monotonic() > deadline:
                raise TimeoutError(f"topics {wanted} have no leaders after {timeout_s}s")
            time.sleep(0.2)


def _differences(
    admin: Any, md: Any, topics: list[str], config: ClientConfig, timeout_s: float
) -> dict[str, str]:
    """How each existing topic differs from the test's settings."""
    from confluent_kafka.admin import ConfigResource

    out = {}
    for topic in topics:
        found = []
        rf = min(len(p.replicas) for p in md.topics[topic].partitions.values())
        if rf != config.replication_factor:
            found.append(f"replication factor {rf}, not {config.replication_factor}")
        if config.min_isr:
            resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
            try:  # only reported: a cluster may refuse DescribeConfigs (ACLs)
                entries = admin.describe_configs([resource])[resource].result(timeout_s)
            except KafkaException as e:
                found.append(f"min.insync.replicas unknown ({e.args[0].str()})")
            else:
                entry = entries.get("min.insync.replicas")
                value = entry.value if entry is not None else None
                if value != str(config.min_isr):
                    found.append(f"min.insync.replicas {value}, not {config.min_isr}")
        if found:
            out[topic] = "; ".join(found)
    return out
