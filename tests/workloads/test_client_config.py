"""What every librdkafka client of a run is configured with."""

from __future__ import annotations

from workloads.config import ClientConfig
from workloads.keys import KeyMap


def test_client_properties_reach_every_client_over_jepkas_own() -> None:
    config = ClientConfig(
        bootstrap="k1:9093",
        keys=(0, 1),
        transactional=True,
        properties={"security.protocol": "SSL", "socket.timeout.ms": "9000"},
    )
    for conf in (config.producer_conf(7), config.consumer_conf(), config.admin_conf()):
        assert conf["bootstrap.servers"] == "k1:9093"
        assert conf["security.protocol"] == "SSL"
        assert conf["socket.timeout.ms"] == "9000"
    assert config.producer_conf(7)["transactional.id"] == "jepka-txn-7"


def test_producers_retry_as_soon_after_any_concurrent_transactions_answer() -> None:
    """librdkafka retries AddPartitionsToTxn after a fixed 20 ms and
    AddOffsetsToTxn after ``retry.backoff.ms``; a client property still wins."""
    assert ClientConfig("k1:9092", (0,)).producer_conf(1)["retry.backoff.ms"] == 20
    own = ClientConfig("k1:9092", (0,), properties={"retry.backoff.ms": "100"})
    assert own.producer_conf(1)["retry.backoff.ms"] == "100"


def test_the_default_key_map_is_jepkas_fixed_topics() -> None:
    assert ClientConfig("k1:9092", (0,)).key_map == KeyMap("jepka-t")


def test_the_transaction_timeout_final_reads_name_is_the_producers() -> None:
    """Three op timeouts, or what the client properties set: the bound the
    checker puts on an end below the high watermark."""
    config = ClientConfig("k1:9092", (0,), transactional=True, op_timeout_s=10.0)
    assert config.txn_timeout_ms == 30_000
    assert config.producer_conf(1)["transaction.timeout.ms"] == 30_000
    own = ClientConfig(
        "k1:9092", (0,), transactional=True, properties={"transaction.timeout.ms": "60000"}
    )
    assert own.txn_timeout_ms == 60_000
    assert ClientConfig("k1:9092", (0,)).txn_timeout_ms is None
    plain = ClientConfig("k1:9092", (0,), properties={"transaction.timeout.ms": "60000"})
    assert plain.txn_timeout_ms is None
