"""DescribeCluster: the brokers, the controller and the cluster id."""

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
