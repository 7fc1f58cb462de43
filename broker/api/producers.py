"""DescribeProducers: each partition's active producers and open transactions,
straight from its ``ProducerStateManager``."""

from __future__ import annotations

from typing import Any

from broker.api.context import RequestContext
from broker.errors import ErrorCode, KafkaError


def active_producers(ctx: RequestContext, topic: str, index: int) -> list[dict[str, Any]]:
    state = ctx.broker.replica_manager.partition(topic, index).log.producer_state
    return [
        {
            "producer_id": e.producer_id,
            "producer_epoch": e.epoch,
            "last_sequence": e.last_seq,
            "last_timestamp": e.last_timestamp,
            "coordinator_epoch": e.coordinator_epoch,
            "current_txn_start_offset": -1 if e.txn_first_offset is None else e.txn_first_offset,
        }
        for e in state.producers.values()
    ]


async def handle_describe_producers(ctx: RequestContext, request: Any) -> dict[str, Any]:
    topics = []
    for topic in request.topics:
        partitions = []
        for index in topic.partition_indexes:
            entry: dict[str, Any] = {"partition_index": index, "error_code": ErrorCode.none}
            try:
                entry["active_producers"] = active_producers(ctx, topic.name, index)
            except KafkaError as e:
                entry.update(error_code=e.code, error_message=e.message, active_producers=[])
            partitions.append(entry)
        topics.append({"name": topic.name, "partitions": partitions})
    return {"throttle_time": 0, "topics": topics}
