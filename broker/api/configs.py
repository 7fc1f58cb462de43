"""DescribeConfigs for topics (their effective configuration) and brokers;
IncrementalAlterConfigs and AlterConfigs for topics."""

from __future__ import annotations

from typing import Any

from broker.api.context import RequestContext
from broker.config import BROKER_KEYS, topic_config
from broker.controller.topic_configs import SET, Op
from broker.errors import ErrorCode, KafkaError

TOPIC, BROKER = 2, 4
SOURCE_TOPIC, SOURCE_STATIC_BROKER, SOURCE_DEFAULT = 1, 4, 5
TYPE_BOOLEAN, TYPE_STRING, TYPE_LONG = 1, 2, 5


def render(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def config_type(value: Any) -> int:
    if isinstance(value, bool):
        return TYPE_BOOLEAN
    return TYPE_LONG if isinstance(value, int) else TYPE_STRING


def entry(name: str, value: Any, source: int, read_only: bool) -> dict[str, Any]:
    """One described config; a topic's are all changeable (AlterConfigs), a
    broker's are static here."""
    return {
        "name": name,
        "value": render(value),
        "read_only": read_only,
        "config_source": source,
        "is_sensitive": False,
        "synonyms": [],
        "config_type": config_type(value),
        "documentation": None,
    }


def describe_topic(ctx: RequestContext, name: str) -> list[dict[str, Any]]:
    topic = ctx.broker.topics.topics[name]
    effective = topic_config(ctx.broker.config, topic.configs)
    broker_values = ctx.broker.config.values
    return [
        entry(
            key,
            value,
            SOURCE_TOPIC
            if key in topic.configs
            else SOURCE_STATIC_BROKER
            if key in broker_values
            else SOURCE_DEFAULT,
            read_only=False,
        )
        for key, value in effective.items()
    ]


def describe_broker(ctx: RequestContext) -> list[dict[str, Any]]:
    config = ctx.broker.config
    return [
        entry(
            key,
            config[key],
            SOURCE_STATIC_BROKER if key in config.values else SOURCE_DEFAULT,
            read_only=True,
        )
        for key in BROKER_KEYS
    ]


async def handle_incremental_alter_configs(ctx: RequestContext, request: Any) -> dict[str, Any]:
    return await _alter(ctx, request, incremental=True)


async def handle_alter_configs(ctx: RequestContext, request: Any) -> dict[str, Any]:
    return await _alter(ctx, request, incremental=False)


async def _alter(ctx: RequestContext, request: Any, incremental: bool) -> dict[str, Any]:
    """Topic config changes: by the active controller on a cluster, in place on a
    single node; broker configs are static here and refused."""
    results: list[tuple[int, str, ErrorCode, str | None]] = []
    changes: dict[str, list[Op]] = {}
    for resource in request.resources:
        name = resource.resource_name
        if resource.resource_type != TOPIC:
            why = "only topic configs can be altered; broker configs are static"
            results.append((resource.resource_type, name, ErrorCode.invalid_request, why))
        else:
            changes[name] = config_changes(resource)
    forwarding = ctx.broker.forwarding
    if forwarding is not None and not request.validate_only and changes:
        done = await forwarding.forward_alter_configs(changes, incremental)
    else:
        done = []
        for name, ops in changes.items():
            try:
                ctx.broker.replica_manager.alter_topic_configs(
                    name, ops, incremental, request.validate_only
                )
                done.append((name, ErrorCode.none, None))
            except KafkaError as e:
                done.append((name, e.code, e.message))
    results += [(TOPIC, name, code, message) for name, code, message in done]
    return {
        "throttle_time": 0,
        "responses": [
            {"error_code": code, "error_message": message, "resource_type": rtype,
             "resource_name": name}
            for rtype, name, code, message in results
        ],
    }  # fmt: skip


def config_changes(resource: Any) -> list[Op]:
    """A resource's changes (AlterConfigs' entries as SETs)."""
    return [(c.name, int(getattr(c, "config_operation", SET)), c.value) for c in resource.configs]


async def handle_describe_configs(ctx: RequestContext, request: Any) -> dict[str, Any]:
    results = []
    for resource in request.resources:
        result: dict[str, Any] = {
            "error_code": ErrorCode.none,
            "error_message": None,
            "resource_type": resource.resource_type,
            "resource_name": resource.resource_name,
            "configs": [],
        }
        if resource.resource_type == TOPIC and resource.resource_name in ctx.broker.topics.topics:
            configs = describe_topic(ctx, resource.resource_name)
        elif resource.resource_type == BROKER and resource.resource_name in (
            "",
            str(ctx.broker.node_id),
        ):
            configs = describe_broker(ctx)
        elif resource.resource_type == TOPIC:
            result["error_code"] = ErrorCode.unknown_topic_or_partition
            configs = []
        else:
            result["error_code"] = ErrorCode.invalid_request
            result["error_message"] = f"unsupported resource {resource.resource_type}"
            configs = []
        wanted = resource.configuration_keys
        result["configs"] = [c for c in configs if wanted is None or c["name"] in wanted]
        results.append(result)
    return {"throttle_time": 0, "results": results}
