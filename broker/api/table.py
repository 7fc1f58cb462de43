"""The API table: which handler answers which API key, at which versions.

Plain data, handed by the broker to the socket server, which dispatches through it;
ApiVersions advertises exactly its ranges. A new API is a handler function and a row
here. A handler is ``async def handle(ctx: RequestContext, request) -> dict | None``:
it gets the kio request for the negotiated version and returns the response as plain
data (``broker.protocol.codec.build`` fits it to the version), or ``None`` for no
response (acks=0 produce).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from broker.api import (
    api_versions,
    cluster,
    configs,
    delete_records,
    fetch,
    group,
    leader_epochs,
    list_offsets,
    metadata,
    produce,
    producers,
    topics,
    txn,
)
from broker.api.context import RequestContext

Handler = Callable[[RequestContext, Any], Awaitable[dict[str, Any] | None]]


@dataclass(frozen=True)
class ApiSpec:
    min_version: int
    max_version: int
    handle: Handler


API_TABLE: Mapping[int, ApiSpec] = MappingProxyType(
    {
        0: ApiSpec(3, 9, produce.handle_produce),
        1: ApiSpec(4, 12, fetch.handle_fetch),
        2: ApiSpec(1, 7, list_offsets.handle_list_offsets),
        3: ApiSpec(0, 12, metadata.handle_metadata),
        8: ApiSpec(2, 8, group.handle_offset_commit),
        9: ApiSpec(1, 8, group.handle_offset_fetch),
        10: ApiSpec(0, 4, group.handle_find_coordinator),
        11: ApiSpec(0, 9, group.handle_join_group),
        12: ApiSpec(0, 4, group.handle_heartbeat),
        13: ApiSpec(0, 5, group.handle_leave_group),
        14: ApiSpec(0, 5, group.handle_sync_group),
        15: ApiSpec(0, 5, group.handle_describe_groups),
        16: ApiSpec(0, 4, group.handle_list_groups),
        18: ApiSpec(0, 3, api_versions.handle_api_versions),
        19: ApiSpec(2, 5, topics.handle_create_topics),
        20: ApiSpec(1, 4, topics.handle_delete_topics),
        21: ApiSpec(0, 2, delete_records.handle_delete_records),
        22: ApiSpec(0, 4, txn.handle_init_producer_id),
        23: ApiSpec(2, 4, leader_epochs.handle_offset_for_leader_epoch),
        24: ApiSpec(0, 4, txn.handle_add_partitions_to_txn),
        25: ApiSpec(0, 3, txn.handle_add_offsets_to_txn),
        26: ApiSpec(0, 3, txn.handle_end_txn),
        27: ApiSpec(1, 1, txn.handle_write_txn_markers),
        28: ApiSpec(0, 3, txn.handle_txn_offset_commit),
        32: ApiSpec(1, 4, configs.handle_describe_configs),
        33: ApiSpec(0, 2, configs.handle_alter_configs),
        37: ApiSpec(0, 3, topics.handle_create_partitions),
        42: ApiSpec(0, 2, group.handle_delete_groups),
        44: ApiSpec(0, 1, configs.handle_incremental_alter_configs),
        55: ApiSpec(0, 1, cluster.handle_describe_quorum),
        60: ApiSpec(0, 1, cluster.handle_describe_cluster),
        61: ApiSpec(0, 0, producers.handle_describe_producers),
        65: ApiSpec(0, 0, txn.handle_describe_transactions),
        66: ApiSpec(0, 1, txn.handle_list_transactions),
    }
)


def api_version_entries(table: Mapping[int, ApiSpec]) -> list[dict[str, int]]:
    """ApiVersions' ``api_keys``: every key's range, in key order."""
    return [
        {"api_key": key, "min_version": spec.min_version, "max_version": spec.max_version}
        for key, spec in sorted(table.items())
    ]
