"""DeleteRecords (KIP-107): each partition's leader raises its log start offset to
the requested offset (-1: the high watermark) and answers with the partition's low
watermark once every in-sync replica's log start has reached it, or
REQUEST_TIMED_OUT after the request's timeout; partitions are waited for
together, as in Kafka's DelayedDeleteRecords. Internal topics are refused
(INVALID_TOPIC_EXCEPTION), as in Kafka."""

from __future__ import annotations

import asyncio
from typing import Any

from broker.api.context import RequestContext
from broker.errors import ErrorCode, KafkaError
from broker.server.topics import INTERNAL_TOPICS


async def handle_delete_records(ctx: RequestContext, request: Any) -> dict[str, Any]:
    timeout_s = max(request.timeout.total_seconds(), 0.0)

    async def delete(topic: str, p: Any) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "partition_index": p.partition_index,
            "low_watermark": -1,
            "error_code": ErrorCode.none,
        }
        try:
            if topic in INTERNAL_TOPICS:
                raise KafkaError(ErrorCode.invalid_topic_exception, "internal topic")
            entry["low_watermark"] = await ctx.broker.replica_manager.delete_records(
                topic, p.partition_index, p.offset, timeout_s
            )
        except KafkaError as e:
            entry["error_code"] = e.code
        return entry

    answers = await asyncio.gather(
        *(delete(t.name, p) for t in request.topics for p in t.partitions)
    )
    results = iter(answers)
    return {
        "throttle_time": 0,
        "topics": [
            {"name": t.name, "partitions": [next(results) for _ in t.partitions]}
            for t in request.topics
        ],
    }
