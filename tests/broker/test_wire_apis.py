"""Error codes and purgatory behaviour observed on the wire."""

from __future__ import annotations

import threading

import pytest
from kio.schema.errors import ErrorCode

from broker.launcher import BrokerProcess
from tests.broker.batches import make_batch, read_values
from tests.broker.wire import WireClient, create_topic, fetch, produce

pytestmark = [pytest.mark.broker, pytest.mark.integration]


@pytest.fixture
def client(shared_broker: BrokerProcess, topic: str):
    client = WireClient(shared_broker.bootstrap, timeout=30)
    assert create_topic(client, topic, 1).error_code == ErrorCode.none
    yield client
    client.close()


def test_produce_errors(client: WireClient, topic: str) -> None:
    assert (
        produce(client, "nope", 0, make_batch([b"x"])).error_code
        == ErrorCode.unknown_topic_or_partition
    )
    assert (
        produce(client, topic, 5, make_batch([b"x"])).error_code
        == ErrorCode.unknown_topic_or_partition
    )
    corrupt = bytearray(make_batch([b"payload"]))
    corrupt[-2] ^= 1
    assert produce(client, topic, 0, bytes(corrupt)).error_code == ErrorCode.corrupt_message
    assert (
        produce(client, topic, 0, make_batch([b"x"]), acks=2).error_code
        == ErrorCode.invalid_required_acks
    )
    internal = produce(client, "__consumer_offsets", 0, make_batch([b"x"]))
    assert internal.error_code == ErrorCode.invalid_topic_exception


def test_min_insync_replicas_counts_at_most_the_replicas(client: WireClient, topic: str) -> None:
    """Kafka's effective min ISR: min.insync.replicas=2 on one replica asks for
    that one replica (a refusal below the minimum: tests/broker/cluster/test_min_isr.py)."""
    single = f"{topic}-single"
    assert create_topic(client, single, 1, min_insync_replicas="2").error_code == ErrorCode.none
    assert produce(client, single, 0, make_batch([b"x"]), acks=-1).error_code == ErrorCode.none


def test_fetch_out_of_range_and_empty_wait(client: WireClient, topic: str) -> None:
    produce(client, topic, 0, make_batch([b"a", b"b"]))
    assert fetch(client, topic, 3).error_code == ErrorCode.offset_out_of_range
    at_end = fetch(client, topic, 2, max_wait_ms=100, min_bytes=1)
    assert (at_end.error_code, at_end.high_watermark, bytes(at_end.records)) == (
        ErrorCode.none,
        2,
        b"",
    )


def test_long_poll_is_woken_by_a_produce(
    shared_broker: BrokerProcess, client: WireClient, topic: str
) -> None:
    results = []
    # max_wait far beyond the socket timeout: only a wake-up can answer in time
    waiter = threading.Thread(
        target=lambda: results.append(fetch(client, topic, 0, max_wait_ms=600_000, min_bytes=1))
    )
    waiter.start()
    other = WireClient(shared_broker.bootstrap)
    try:
        assert produce(other, topic, 0, make_batch([b"wake"])).error_code == ErrorCode.none
    finally:
        other.close()
    waiter.join(60)
    assert [v for _, v in read_values(bytes(results[0].records))] == [b"wake"]


def test_describe_producers_shows_idempotent_state(client: WireClient, topic: str) -> None:
    produce(client, topic, 0, make_batch([b"a", b"b", b"c"], 77, 3, 0))
    response = client.request(61, 0, {"topics": [{"name": topic, "partition_indexes": [0, 9]}]})
    ok, missing = response.topics[0].partitions
    [state] = ok.active_producers
    assert (state.producer_id, state.producer_epoch, state.last_sequence) == (77, 3, 2)
    assert missing.error_code == ErrorCode.unknown_topic_or_partition


def test_fetch_checks_the_clients_leader_epoch(client: WireClient, topic: str) -> None:
    assert fetch(client, topic, 0, leader_epoch=0).error_code == ErrorCode.none
    assert fetch(client, topic, 0, leader_epoch=3).error_code == ErrorCode.unknown_leader_epoch
