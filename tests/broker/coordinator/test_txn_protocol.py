"""Transaction and offset APIs at the wire: exact error codes as Kafka returns them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kio.schema.errors import ErrorCode

from broker.launcher import BrokerProcess
from tests.broker.coordinator import wire_calls as w
from tests.broker.wire import WireClient, create_topic

pytestmark = [pytest.mark.broker, pytest.mark.integration]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WireClient]:
    from tests.broker.coordinator.conftest import COORDINATOR_SETTINGS

    broker = BrokerProcess(
        tmp_path_factory.mktemp("wire") / "node1", list(COORDINATOR_SETTINGS)
    ).start()
    try:
        client = WireClient(broker.bootstrap)
        assert create_topic(client, "t", 2).error_code == ErrorCode.none
        yield client
        client.close()
    finally:
        broker.kill()


def test_idempotent_producers_get_fresh_ids(client: WireClient) -> None:
    first, second = w.init_producer_id(client, None), w.init_producer_id(client, None)
    assert first.error_code == second.error_code == ErrorCode.none
    assert second.producer_id > first.producer_id and first.producer_epoch == 0


def test_init_bumps_the_epoch_and_fences_stale_epochs(client: WireClient) -> None:
    a = w.init_producer_id(client, "bump")
    b = w.init_producer_id(client, "bump")
    assert (b.producer_id, b.producer_epoch) == (a.producer_id, a.producer_epoch + 1)
    retry = w.init_producer_id(client, "bump", b.producer_id, b.producer_epoch)
    assert (retry.error_code, retry.producer_epoch) == (ErrorCode.none, b.producer_epoch + 1)
    stale = w.init_producer_id(client, "bump", a.producer_id, a.producer_epoch)
    assert stale.error_code == ErrorCode.producer_fenced
    old_version = w.init_producer_id(client, "bump", a.producer_id, a.producer_epoch, version=3)
    assert old_version.error_code == ErrorCode.invalid_producer_epoch
    too_long = w.init_producer_id(client, "bump", timeout_ms=10**9)
    assert too_long.error_code == ErrorCode.invalid_transaction_timeout


def test_add_partitions_and_end_txn_errors(client: WireClient) -> None:
    init = w.init_producer_id(client, "errs")
    pid, epoch = init.producer_id, init.producer_epoch
    assert (
        w.end_txn(client, "errs", pid, epoch, True) == ErrorCode.invalid_txn_state
    )  # nothing begun
    assert w.add_partitions(client, "errs", pid + 1, epoch, "t", [0]) == {
        ("t", 0): ErrorCode.invalid_producer_id_mapping
    }
    assert w.add_partitions(client, "errs", pid, epoch - 1, "t", [0]) == {
        ("t", 0): ErrorCode.producer_fenced
    }
    assert w.add_partitions(client, "nobody", pid, epoch, "t", [0]) == {
        ("t", 0): ErrorCode.invalid_producer_id_mapping
    }
    mixed = w.add_partitions(client, "errs", pid, epoch, "t", [0, 7])
    assert mixed == {
        ("t", 0): ErrorCode.operation_not_attempted,
        ("t", 7): ErrorCode.unknown_topic_or_partition,
    }
    assert w.add_partitions(client, "errs", pid, epoch, "t", [0, 1]) == {
        ("t", 0): ErrorCode.none,
        ("t", 1): ErrorCode.none,
    }
    assert w.end_txn(client, "errs", pid, epoch - 1, True) == ErrorCode.producer_fenced
    assert (
        w.end_txn(client, "errs", pid, epoch - 1, True, version=1)
        == ErrorCode.invalid_producer_epoch
    )
    assert w.end_txn(client, "errs", pid, epoch, False) == ErrorCode.none
    assert w.end_txn(client, "errs", pid, epoch, True) in (
        ErrorCode.invalid_txn_state,  # aborted: a commit now is a different decision
        ErrorCode.concurrent_transactions,
    )


@pytest.mark.parametrize("commit", [True, False])
def test_txn_offsets_are_unstable_until_the_marker_then_visible_or_dropped(
    client: WireClient, commit: bool
) -> None:
    txn_id, group = f"offsets-{commit}", f"g-{commit}"
    assert w.commit_offset(client, group, "t", 3) == ErrorCode.none
    init = w.init_producer_id(client, txn_id)
    pid, epoch = init.producer_id, init.producer_epoch
    assert w.add_offsets(client, txn_id, pid, epoch, group) == ErrorCode.none
    assert w.txn_offset_commit(client, txn_id, pid, epoch, group, "t", 10) == ErrorCode.none
    assert w.fetch_offset(client, group, "t", require_stable=True) == (
        -1,
        ErrorCode.unstable_offset_commit,
    )
    assert w.fetch_offset(client, group, "t", require_stable=False) == (3, ErrorCode.none)
    assert w.end_txn(client, txn_id, pid, epoch, commit) == ErrorCode.none
    assert w.wait_for_stable_offset(client, group, "t") == (10 if commit else 3)


def test_simple_commits_and_unknown_groups(client: WireClient) -> None:
    assert w.commit_offset(client, "plain", "t", 5) == ErrorCode.none
    assert w.fetch_offset(client, "plain", "t", require_stable=True) == (5, ErrorCode.none)
    assert w.fetch_offset(client, "never-used", "t", require_stable=False) == (-1, ErrorCode.none)


def test_describe_and_list_transactions(client: WireClient) -> None:
    init = w.init_producer_id(client, "described")
    pid, epoch = init.producer_id, init.producer_epoch
    assert w.add_partitions(client, "described", pid, epoch, "t", [1, 0]) == {
        ("t", 1): ErrorCode.none,
        ("t", 0): ErrorCode.none,
    }
    described = client.request(65, 0, {"transactional_ids": ["described", "missing"]})
    found, missing = described.transaction_states
    assert (found.error_code, found.transaction_state, found.producer_id) == (
        ErrorCode.none,
        "Ongoing",
        pid,
    )
    assert [(t.topic, t.partitions) for t in found.topics] == [("t", (0, 1))]
    assert found.transaction_start_time.timestamp() > 0
    assert missing.error_code == ErrorCode.transactional_id_not_found
    listed = client.request(
        66,
        1,
        {"state_filters": ["Ongoing", "Bogus"], "producer_id_filters": [], "duration_filter": -1},
    )
    assert listed.unknown_state_filters == ("Bogus",)
    assert ("described", pid, "Ongoing") in [
        (s.transactional_id, s.producer_id, s.transaction_state) for s in listed.transaction_states
    ]
    assert all(s.transaction_state == "Ongoing" for s in listed.transaction_states)
    assert w.end_txn(client, "described", pid, epoch, False) == ErrorCode.none
