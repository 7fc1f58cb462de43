"""DescribeCluster: the brokers, the controller and the cluster id; DescribeQuorum:
the metadata quorum."""

from __future__ import annotations

from typing import Any

from broker.api.context import RequestContext
from broker.errors import ErrorCode


async def handle_describe_cluster(ctx: RequestContext, request: Any) -> dict[str, Any]:
    broker = ctx.broker
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "error_message": None,
        "endpoint_type": 1,
        "cluster_id": broker.config["cluster.id"],
        "controller_id": broker.metadata_cache.controller_id(),
        "brokers": [
            {"broker_id": node, "host": host, "port": port, "rack": None}
            for node, host, port in broker.metadata_cache.alive_brokers()
        ],
        "cluster_authorized_operations": -2147483648,
    }


async def handle_describe_quorum(ctx: RequestContext, request: Any) -> dict[str, Any]:
    """Forwarded to the active controller, as a KRaft broker does; a single node,
    which decides alone, answers as the only voter and leader of its quorum."""
    broker = ctx.broker
    if broker.forwarding is not None:
        return await broker.forwarding.forward_describe_quorum()
    node = broker.node_id
    partition = {
        "partition_index": 0,
        "error_code": ErrorCode.none,
        "leader_id": node,
        "leader_epoch": 0,
        "high_watermark": -1,
        "current_voters": [{"replica_id": node, "log_end_offset": -1}],
        "observers": [],
    }
    return {
        "error_code": ErrorCode.none,
        "topics": [{"topic_name": "__cluster_metadata", "partitions": [partition]}],
    }
