"""Metadata: brokers, topics and partition leadership; may auto-create topics
when ``auto.create.topics.enable`` is on and the client allows it."""

from __future__ import annotations

import uuid
from typing import Any

from broker.api.context import RequestContext
from broker.errors import ErrorCode, KafkaError
from broker.server.topics import TopicInfo

ZERO_UUID = uuid.UUID(int=0)


def topic_entry(topic: TopicInfo) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.none,
        "name": topic.name,
        "topic_id": topic.uuid,
        "is_internal": topic.internal,
        "partitions": [
            {
                "error_code": ErrorCode.none,
                "partition_index": index,
                "leader_id": p.leader,
                "leader_epoch": p.leader_epoch,
                "replica_nodes": p.replicas,
                "isr_nodes": p.isr,
                "offline_replicas": [],
            }
            for index, p in enumerate(topic.partitions)
        ],
        "topic_authorized_operations": -2147483648,
    }


def error_entry(name: str | None, code: ErrorCode) -> dict[str, Any]:
    return {
        "error_code": code,
        "name": name,
        "topic_id": ZERO_UUID,
        "is_internal": False,
        "partitions": [],
    }


def _requested(ctx: RequestContext, request: Any) -> list[str | uuid.UUID] | None:
    """Requested topic names (or ids); ``None`` means all topics."""
    if request.topics is None or (ctx.api_version == 0 and not request.topics):
        return None
    if ctx.api_version < 12 and any(t.name is None for t in request.topics):
        # topic ids alone arrive from v12; v10 and v11 answer with names that cannot be null
        raise KafkaError(
            ErrorCode.invalid_request, f"topic name can not be null for version {ctx.api_version}"
        )
    return [t.name if t.name is not None else t.topic_id for t in request.topics]


async def handle_metadata(ctx: RequestContext, request: Any) -> dict[str, Any]:
    broker = ctx.broker
    store = broker.topics
    requested = _requested(ctx, request)
    topics: list[dict[str, Any]] = []
    if requested is None:
        topics = [topic_entry(t) for t in store.topics.values()]
    for wanted in requested or []:
        if isinstance(wanted, uuid.UUID):
            found = store.by_id(wanted)
            topics.append(
                topic_entry(found) if found else error_entry(None, ErrorCode.unknown_topic_id)
            )
            continue
        topic = store.topics.get(wanted)
        if (
            topic is None
            and getattr(request, "allow_auto_topic_creation", True)
            and broker.config["auto.create.topics.enable"]
        ):
            if broker.forwarding is not None:  # created by the controller; retry to see it
                await broker.forwarding.auto_create(wanted)
                topics.append(error_entry(wanted, ErrorCode.leader_not_available))
                continue
            try:
                topic = broker.replica_manager.create_topic(wanted, -1, -1, {})
            except KafkaError as e:
                topics.append(error_entry(wanted, e.code))
                continue
        topics.append(
            topic_entry(topic)
            if topic
            else error_entry(wanted, ErrorCode.unknown_topic_or_partition)
        )
    return {
        "throttle_time": 0,
        "brokers": [
            {"node_id": node, "host": host, "port": port, "rack": None}
            for node, host, port in broker.metadata_cache.alive_brokers()
        ],
        "cluster_id": broker.config["cluster.id"],
        "controller_id": broker.metadata_cache.controller_id(),
        "topics": topics,
        "cluster_authorized_operations": -2147483648,
    }
