"""Fetch: long-polls in the ReplicaManager's purgatory; read_committed reads stop
at the last stable offset and carry the aborted-transaction list. A consumer's
fetch session (KIP-227) is declined with session id 0, so clients send full
requests; followers fetch in sessions (``broker.replication.fetch_session``)."""

from __future__ import annotations

from typing import Any

from broker.api.context import RequestContext
from broker.errors import ErrorCode
from broker.replication.replica_fetch import serve_replica_fetch
from broker.server.replica_manager import FetchRequestPartition

READ_COMMITTED = 1


async def handle_fetch(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if getattr(request, "replica_id", -1) >= 0 and ctx.broker.forwarding is not None:
        return await serve_replica_fetch(
            ctx.broker.replica_manager, request, ctx.broker.fetch_sessions
        )
    wanted = [
        FetchRequestPartition(
            topic.topic,
            p.partition,
            p.fetch_offset,
            p.partition_max_bytes,
            getattr(p, "current_leader_epoch", -1),
        )
        for topic in request.topics
        for p in topic.partitions
    ]
    read_committed = getattr(request, "isolation_level", 0) == READ_COMMITTED
    max_wait_ms = int(request.max_wait.total_seconds() * 1000)
    max_bytes = getattr(request, "max_bytes", 2**31 - 1)
    results = await ctx.broker.replica_manager.fetch(
        wanted, request.min_bytes, max_wait_ms, max_bytes, read_committed
    )
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for part, result in zip(wanted, results, strict=True):
        by_topic.setdefault(part.topic, []).append(
            {
                "partition_index": part.partition,
                "error_code": result.error,
                "high_watermark": result.high_watermark,
                "last_stable_offset": result.last_stable_offset,
                "log_start_offset": result.log_start_offset,
                "aborted_transactions": (
                    [
                        {"producer_id": a.producer_id, "first_offset": a.first_offset}
                        for a in result.aborted
                    ]
                    if read_committed
                    else None
                ),
                "preferred_read_replica": -1,
                "records": result.records,
            }
        )
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "session_id": 0,
        "responses": [{"topic": name, "partitions": parts} for name, parts in by_topic.items()],
    }
