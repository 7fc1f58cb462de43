"""Produce: append each partition's batch through the ReplicaManager; acks=0
gets no response, as in Kafka."""

from __future__ import annotations

import logging
from typing import Any

from broker.api.context import RequestContext
from broker.errors import ErrorCode, KafkaError
from broker.server.topics import INTERNAL_TOPICS

log = logging.getLogger(__name__)


async def handle_produce(ctx: RequestContext, request: Any) -> dict[str, Any] | None:
    manager = ctx.broker.replica_manager
    responses = []
    for topic in request.topic_data:
        partitions = []
        for data in topic.partition_data:
            entry: dict[str, Any] = {
                "index": data.index,
                "error_code": ErrorCode.none,
                "base_offset": -1,
                "log_append_time": -1,
                "log_start_offset": -1,
                "record_errors": [],
                "error_message": None,
            }
            try:
                if request.acks not in (0, 1, -1):
                    raise KafkaError(ErrorCode.invalid_required_acks, f"acks={request.acks}")
                if topic.name in INTERNAL_TOPICS:
                    raise KafkaError(ErrorCode.invalid_topic_exception, "internal topic")
                if data.records is None:
                    raise KafkaError(ErrorCode.invalid_record, "null records")
                await ctx.broker.txn_verifier.check_append(
                    request.transactional_id, topic.name, data.index, data.records
                )
                result = await manager.append_records(
                    topic.name, data.index, data.records, request.acks
                )
                entry["base_offset"] = result.first_offset
                entry["log_start_offset"] = manager.partition(
                    topic.name, data.index
                ).log.log_start_offset
            except KafkaError as e:
                if e.code not in (ErrorCode.unknown_topic_or_partition,):
                    log.info(
                        "produce to %s-%d refused: %s %s",
                        topic.name,
                        data.index,
                        e.code.name,
                        e.message or "",
                    )
                entry["error_code"] = e.code
                entry["error_message"] = e.message
            partitions.append(entry)
        responses.append({"name": topic.name, "partition_responses": partitions})
    if request.acks == 0:
        return None
    return {"responses": responses, "throttle_time": 0}
