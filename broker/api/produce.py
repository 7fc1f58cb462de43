"""Produce: append each partition's batch through the ReplicaManager, then, for
acks=all, wait for every partition together under the request's own timeout
(Kafka's DelayedProduce); acks=0 gets no response, as in Kafka."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from broker.api.context import RequestContext
from broker.errors import ErrorCode, KafkaError
from broker.server.partition import Partition
from broker.server.topics import INTERNAL_TOPICS

log = logging.getLogger(__name__)


async def handle_produce(ctx: RequestContext, request: Any) -> dict[str, Any] | None:
    responses = []
    waits: list[tuple[dict[str, Any], str, Partition, int]] = []
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
                partition, end = await _append(ctx, request, topic.name, data, entry)
                if request.acks == -1:
                    waits.append((entry, topic.name, partition, end))
            except KafkaError as e:
                _refuse(entry, topic.name, e)
            partitions.append(entry)
        responses.append({"name": topic.name, "partition_responses": partitions})
    timeout_s = max(request.timeout.total_seconds(), 0.0)
    await asyncio.gather(*(_replicated(entry, t, p, end, timeout_s) for entry, t, p, end in waits))
    if request.acks == 0:
        return None
    return {"responses": responses, "throttle_time": 0}


async def _append(
    ctx: RequestContext, request: Any, topic: str, data: Any, entry: dict[str, Any]
) -> tuple[Partition, int]:
    """Appends one partition's batch on its leader; returns the partition and
    the end offset acks=all waits for."""
    if request.acks not in (0, 1, -1):
        raise KafkaError(ErrorCode.invalid_required_acks, f"acks={request.acks}")
    if topic in INTERNAL_TOPICS:
        raise KafkaError(ErrorCode.invalid_topic_exception, "internal topic")
    if data.records is None:
        raise KafkaError(ErrorCode.invalid_record, "null records")
    await ctx.broker.txn_verifier.check_append(
        request.transactional_id, topic, data.index, data.records
    )
    manager = ctx.broker.replica_manager
    result, partition = manager.append_to_leader(topic, data.index, data.records, request.acks)
    entry["base_offset"] = result.first_offset
    entry["log_start_offset"] = partition.log.log_start_offset
    return partition, result.last_offset + 1


async def _replicated(
    entry: dict[str, Any], topic: str, partition: Partition, end: int, timeout_s: float
) -> None:
    try:
        await partition.wait_replicated(end, timeout_s)
    except KafkaError as e:
        _refuse(entry, topic, e)


def _refuse(entry: dict[str, Any], topic: str, e: KafkaError) -> None:
    if e.code is not ErrorCode.unknown_topic_or_partition:
        log.info(
            "produce to %s-%d refused: %s %s", topic, entry["index"], e.code.name, e.message or ""
        )
    entry["error_code"] = e.code
    entry["error_message"] = e.message
