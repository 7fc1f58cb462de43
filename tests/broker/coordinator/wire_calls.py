"""Exact coordinator requests over the wire (kio), for checking error codes and
fields that real clients hide."""

from __future__ import annotations

from typing import Any

from tests.broker.wire import WireClient
from tests.eventually import eventually


def init_producer_id(
    client: WireClient,
    txn_id: str | None,
    pid: int = -1,
    epoch: int = -1,
    version: int = 4,
    timeout_ms: int = 60_000,
) -> Any:
    return client.request(
        22,
        version,
        {
            "transactional_id": txn_id,
            "transaction_timeout": timeout_ms,
            "producer_id": pid,
            "producer_epoch": epoch,
        },
    )


def add_partitions(
    client: WireClient, txn_id: str, pid: int, epoch: int, topic: str, partitions: list[int]
) -> dict[tuple[str, int], int]:
    response = client.request(
        24,
        3,
        {
            "v3_and_below_transactional_id": txn_id,
            "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [{"name": topic, "partitions": partitions}],
        },
    )
    return {
        (t.name, p.partition_index): p.partition_error_code
        for t in response.results_by_topic_v3_and_below
        for p in t.results_by_partition
    }


def add_offsets(client: WireClient, txn_id: str, pid: int, epoch: int, group: str) -> int:
    return client.request(
        25,
        3,
        {
            "transactional_id": txn_id,
            "producer_id": pid,
            "producer_epoch": epoch,
            "group_id": group,
        },
    ).error_code


def offsets_of_partition_0(topic: str, offset: int, metadata: str) -> list[dict[str, Any]]:
    """The ``topics`` of an OffsetCommit or TxnOffsetCommit: ``offset`` for ``topic``-0."""
    partition = {
        "partition_index": 0,
        "committed_offset": offset,
        "committed_leader_epoch": -1,
        "committed_metadata": metadata,
    }
    return [{"name": topic, "partitions": [partition]}]


def txn_offset_commit(
    client: WireClient, txn_id: str, pid: int, epoch: int, group: str, topic: str, offset: int
) -> int:
    response = client.request(
        28,
        3,
        {
            "transactional_id": txn_id,
            "group_id": group,
            "producer_id": pid,
            "producer_epoch": epoch,
            "generation_id": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": offsets_of_partition_0(topic, offset, ""),
        },
    )
    return response.topics[0].partitions[0].error_code


def end_txn(
    client: WireClient, txn_id: str, pid: int, epoch: int, commit: bool, version: int = 3
) -> int:
    return client.request(
        26,
        version,
        {
            "transactional_id": txn_id,
            "producer_id": pid,
            "producer_epoch": epoch,
            "committed": commit,
        },
    ).error_code


def fetch_offset(
    client: WireClient, group: str, topic: str, require_stable: bool
) -> tuple[int, int]:
    """``(committed_offset, error_code)`` of partition 0 (OffsetFetch v7)."""
    response = client.request(
        9,
        7,
        {
            "group_id": group,
            "topics": [{"name": topic, "partition_indexes": [0]}],
            "require_stable": require_stable,
        },
    )
    partition = response.topics[0].partitions[0]
    return partition.committed_offset, partition.error_code


def wait_for_stable_offset(client: WireClient, group: str, topic: str, timeout: float = 10) -> int:
    """Markers are written after EndTxn answers; the offset becomes stable soon after."""

    def stable() -> tuple[int] | None:  # a tuple, as offset 0 is falsy
        offset, error = fetch_offset(client, group, topic, require_stable=True)
        return (offset,) if error == 0 else None

    (offset,) = eventually(stable, timeout, what=f"offset of {group} still unstable")
    return offset


def commit_offset(client: WireClient, group: str, topic: str, offset: int) -> int:
    """A simple (generation -1) OffsetCommit v8 of partition 0."""
    response = client.request(
        8,
        8,
        {
            "group_id": group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": offsets_of_partition_0(topic, offset, "m"),
        },
    )
    return response.topics[0].partitions[0].error_code
