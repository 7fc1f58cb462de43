"""Kafka client errors → ``fail`` (certainly did not happen) or ``info`` (unknown).

A history is only as good as this table. ``fail`` is a promise to the
checker that the operation had no effect, so it is given only where Kafka's
protocol guarantees that: the request was refused before anything was
written (unknown topic, invalid request, authorisation), or a transaction
was aborted and the abort was acknowledged. Everything else — timeouts,
lost connections, unknown server errors and, surprisingly,
``NOT_LEADER_OR_FOLLOWER`` (a produce may be replicated and committed even
though the old leader answers with it; KAFKA-13574) — is ``info``.

Producer errors after which the producer cannot go on (fenced, out-of-order
sequence, fatal idempotence errors) also set ``end_process``: the worker
closes the client and continues with a new process and a fresh producer.
Shaped like aiokafka's ``errors.py`` registry: one entry per code, looked up
by :func:`classify`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from confluent_kafka import KafkaError, KafkaException


@dataclass(frozen=True, slots=True)
class Outcome:
    """How an error completes an op: its ``type``, a short ``error`` name and
    whether the process must end."""

    type: str
    error: str
    end_process: bool = False


def error_name(code: int) -> str:
    """``KafkaError.NOT_LEADER_FOR_PARTITION`` → ``not-leader-for-partition``."""
    try:
        text = KafkaError(code).name()
    except Exception:
        text = f"code-{code}"
    return text.strip("_").lower().replace("_", "-")


# Refused before anything was written: the op certainly did not happen.
DEFINITE: frozenset[int] = frozenset(
    getattr(KafkaError, n)
    for n in (
        "UNKNOWN_TOPIC_OR_PART",
        "_UNKNOWN_TOPIC",
        "_UNKNOWN_PARTITION",
        "TOPIC_EXCEPTION",
        "INVALID_MSG",
        "INVALID_MSG_SIZE",
        "MSG_SIZE_TOO_LARGE",
        "RECORD_LIST_TOO_LARGE",
        "INVALID_REQUIRED_ACKS",
        "INVALID_RECORD",
        "TOPIC_AUTHORIZATION_FAILED",
        "CLUSTER_AUTHORIZATION_FAILED",
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
        "UNSUPPORTED_VERSION",
        "UNSUPPORTED_FOR_MESSAGE_FORMAT",
        "_INVALID_ARG",
        "_QUEUE_FULL",
        "_UNSUPPORTED_FEATURE",
        "_STATE",
    )
)

# The producer is unusable afterwards; a new process gets a new one.
# Fenced or out-of-order: Kafka rejected the batch, so it did not happen (Jepsen).
# librdkafka marks an out-of-order refusal possibly persisted, as it cannot
# tell a broker that lost its sequence state from one that never wrote; with
# Kafka's deduplication a refused attempt is not in the log, and a read of it
# is the broker's fault (Redpanda #3039).
FENCED: frozenset[int] = frozenset(
    getattr(KafkaError, n)
    for n in (
        "PRODUCER_FENCED",
        "_FENCED",
        "INVALID_PRODUCER_EPOCH",
        "OUT_OF_ORDER_SEQUENCE_NUMBER",
        "TRANSACTION_COORDINATOR_FENCED",
        "INVALID_PRODUCER_ID_MAPPING",
    )
)


class IntentionalAbort(Exception):
    """Raised inside a transaction to abort it on purpose (``--abort-p``)."""


class ClientCrash(Exception):
    """A ``crash`` op: the client is torn down as if its process died."""


def classify_code(code: int, fatal: bool = False) -> Outcome:
    """The outcome for a librdkafka error code."""
    name = error_name(code)
    if code in FENCED:
        return Outcome("fail", name, end_process=True)
    if fatal:
        return Outcome("info", name, end_process=True)
    if code in DEFINITE:
        return Outcome("fail", name)
    return Outcome("info", name)


def _unwrapped(e: BaseException | KafkaError) -> BaseException | KafkaError:
    """The ``KafkaError`` a ``KafkaException`` carries, else ``e``."""
    if isinstance(e, KafkaException) and e.args and isinstance(e.args[0], KafkaError):
        return e.args[0]
    return e


def classify(e: BaseException | KafkaError) -> Outcome:
    """The outcome for anything a client call raised or reported."""
    e = _unwrapped(e)
    if isinstance(e, KafkaError):
        return classify_code(e.code(), e.fatal())
    if isinstance(e, ClientCrash):
        return Outcome("info", "crash", end_process=True)
    if isinstance(e, TimeoutError):
        return Outcome("info", "timeout")
    return Outcome("info", f"indeterminate: {type(e).__name__}: {e}".rstrip(": "))


# A transactional call that timed out goes on inside librdkafka, which then
# refuses every other transactional call (``_CONFLICT``) until the same call
# is made again; the process ends so that the next one gets a fresh producer.
IN_PROGRESS: frozenset[int] = frozenset({KafkaError._TIMED_OUT, KafkaError._CONFLICT})


def classify_txn(e: BaseException | KafkaError) -> Outcome:
    """The outcome for what a transaction's calls raised (see ``IN_PROGRESS``)."""
    outcome = classify(e)
    e = _unwrapped(e)
    if isinstance(e, KafkaError) and e.code() in IN_PROGRESS:
        return replace(outcome, end_process=True)
    return outcome


# Delivery reports come after librdkafka's retries: an earlier attempt may
# have timed out yet been written, so only errors raised before anything
# was sent are definite there.
LOCAL_DEFINITE: frozenset[int] = frozenset(
    getattr(KafkaError, n)
    for n in ("_UNKNOWN_TOPIC", "_UNKNOWN_PARTITION", "_INVALID_ARG", "_QUEUE_FULL", "_STATE")
)


def classify_delivery(err: KafkaError) -> Outcome:
    """The outcome for a produce's delivery-report error (see ``LOCAL_DEFINITE``)."""
    code = err.code()
    if code in FENCED or code in LOCAL_DEFINITE:
        return classify_code(code, err.fatal())
    return Outcome("info", error_name(code), end_process=err.fatal())


def is_abortable(e: BaseException | KafkaError) -> bool:
    """Whether a transactional error asks for an abort (the txn can be rolled back)."""
    e = _unwrapped(e)
    return isinstance(e, KafkaError) and e.txn_requires_abort()
