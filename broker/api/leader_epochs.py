"""OffsetForLeaderEpoch (KIP-101, KIP-320): where a leader epoch ends in the
leader's log. Followers truncate to it after a leader change; consumers validate
their position with it."""

from __future__ import annotations

from typing import Any

from broker.api.context import RequestContext
from broker.errors import ErrorCode, KafkaError
from broker.replication.partition import end_offset_for_epoch


def _answer(ctx: RequestContext, topic: str, p: Any) -> dict[str, Any]:
    try:
        partition = ctx.broker.replica_manager.partition(topic, p.partition)
        partition.check_leader_epoch(getattr(p, "current_leader_epoch", -1))
        partition.check_leader(ctx.broker.node_id)
        epoch, end = end_offset_for_epoch(partition.log, p.leader_epoch)
        return {"error_code": ErrorCode.none, "partition": p.partition, "leader_epoch": epoch,
                "end_offset": end}  # fmt: skip
    except KafkaError as e:
        return {"error_code": e.code, "partition": p.partition, "leader_epoch": -1,
                "end_offset": -1}  # fmt: skip


async def handle_offset_for_leader_epoch(ctx: RequestContext, request: Any) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "topics": [
            {"topic": t.topic, "partitions": [_answer(ctx, t.topic, p) for p in t.partitions]}
            for t in request.topics
        ],
    }
