"""The error → fail|info table: definite only where nothing can have happened."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from workloads.outcomes import (
    ClientCrash,
    Outcome,
    classify,
    classify_delivery,
    classify_txn,
    is_abortable,
)

E = KafkaError


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # refused before anything was written
        (E.UNKNOWN_TOPIC_OR_PART, Outcome("fail", "unknown-topic-or-part")),
        (E._UNKNOWN_TOPIC, Outcome("fail", "unknown-topic")),
        (E.TOPIC_AUTHORIZATION_FAILED, Outcome("fail", "topic-authorization-failed")),
        (E.MSG_SIZE_TOO_LARGE, Outcome("fail", "msg-size-too-large")),
        # fenced or out of order: rejected, and the producer must be replaced
        (E.PRODUCER_FENCED, Outcome("fail", "producer-fenced", end_process=True)),
        (
            E.OUT_OF_ORDER_SEQUENCE_NUMBER,
            Outcome("fail", "out-of-order-sequence-number", end_process=True),
        ),
        (E.INVALID_PRODUCER_EPOCH, Outcome("fail", "invalid-producer-epoch", end_process=True)),
        # unknown: may have been written
        (E.NOT_LEADER_FOR_PARTITION, Outcome("info", "not-leader-for-partition")),  # KAFKA-13574
        (E.REQUEST_TIMED_OUT, Outcome("info", "request-timed-out")),
        (E._MSG_TIMED_OUT, Outcome("info", "msg-timed-out")),
        (E._TIMED_OUT, Outcome("info", "timed-out")),
        (E._TRANSPORT, Outcome("info", "transport")),
        (E._ALL_BROKERS_DOWN, Outcome("info", "all-brokers-down")),
        (E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, Outcome("info", "not-enough-replicas-after-append")),
        (E.UNKNOWN, Outcome("info", "unknown")),
        (E.INVALID_TXN_STATE, Outcome("info", "invalid-txn-state")),
        (E.NETWORK_EXCEPTION, Outcome("info", "network-exception")),
    ],
)
def test_call_errors(code: int, expected: Outcome) -> None:
    assert classify(KafkaException(KafkaError(code))) == expected
    assert classify(KafkaError(code)) == expected


def test_fatal_errors_end_the_process_and_stay_unknown() -> None:
    out = classify(KafkaError(E.NOT_LEADER_FOR_PARTITION, fatal=True))
    assert out == Outcome("info", "not-leader-for-partition", end_process=True)


def test_delivery_reports_trust_only_local_refusals() -> None:
    # after retries an earlier attempt may have landed: server refusals are unknown
    assert classify_delivery(KafkaError(E.UNKNOWN_TOPIC_OR_PART)).type == "info"
    assert classify_delivery(KafkaError(E.MSG_SIZE_TOO_LARGE)).type == "info"
    assert classify_delivery(KafkaError(E._UNKNOWN_PARTITION)) == Outcome(
        "fail", "unknown-partition"
    )
    assert classify_delivery(KafkaError(E.OUT_OF_ORDER_SEQUENCE_NUMBER)).end_process


def test_other_exceptions() -> None:
    assert classify(ClientCrash()) == Outcome("info", "crash", end_process=True)
    assert classify(TimeoutError("x")) == Outcome("info", "timeout")
    assert classify(ValueError("bad")) == Outcome("info", "indeterminate: ValueError: bad")


def test_abortable() -> None:
    assert is_abortable(KafkaException(KafkaError(E._STATE, txn_requires_abort=True)))
    assert not is_abortable(KafkaException(KafkaError(E._STATE)))
    assert not is_abortable(ValueError())


def test_a_timed_out_transactional_call_ends_the_process() -> None:
    for code in (E._TIMED_OUT, E._CONFLICT):
        outcome = classify_txn(KafkaException(KafkaError(code)))
        assert outcome.type == "info" and outcome.end_process
    assert classify_txn(KafkaException(KafkaError(E._STATE))) == Outcome("fail", "state")
    assert classify_txn(TimeoutError()) == Outcome("info", "timeout")
