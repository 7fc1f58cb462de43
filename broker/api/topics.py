"""CreateTopics, CreatePartitions and DeleteTopics."""

from __future__ import annotations

from typing import Any

from broker.api.context import RequestContext
from broker.config import topic_config
from broker.controller.replication_control import EXCESSIVE_BATCH, excessive_batch
from broker.errors import ErrorCode, KafkaError
from broker.server.topics import check_topic_name


async def handle_create_topics(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if ctx.broker.forwarding is not None and not request.validate_only:
        return await ctx.broker.forwarding.forward_create_topics(request)
    manager = ctx.broker.replica_manager
    default = manager.config["num.partitions"]
    partitions = [t.num_partitions if t.num_partitions > 0 else default for t in request.topics]
    if excessive_batch(partitions):  # every topic refused, as Kafka's controller does
        error = {"error_code": ErrorCode.policy_violation, "error_message": EXCESSIVE_BATCH}
        refused = {"num_partitions": -1, "replication_factor": -1, "configs": [], **error}
        return {"throttle_time": 0, "topics": [{"name": t.name, **refused} for t in request.topics]}
    results = []
    for wanted in request.topics:
        configs = {c.name: c.value for c in wanted.configs}
        result: dict[str, Any] = {
            "name": wanted.name,
            "error_code": ErrorCode.none,
            "error_message": None,
        }
        try:
            if wanted.assignments:
                raise KafkaError(
                    ErrorCode.invalid_request, "manual replica assignments are not supported"
                )
            check_topic_name(wanted.name)
            topic = manager.create_topic(
                wanted.name,
                wanted.num_partitions,
                wanted.replication_factor,
                configs,
                request.validate_only,
            )
            effective = topic_config(ctx.broker.config, configs)
            result.update(
                num_partitions=len(topic.partitions) or wanted.num_partitions,
                replication_factor=len(topic.partitions[0].replicas)
                if topic.partitions
                else wanted.replication_factor,
                configs=[
                    {
                        "name": k,
                        "value": str(v).lower() if isinstance(v, bool) else str(v),
                        "read_only": False,
                        "config_source": 1 if k in configs else 5,
                        "is_sensitive": False,
                    }
                    for k, v in effective.items()
                ],
            )
        except KafkaError as e:
            result.update(
                error_code=e.code,
                error_message=e.message,
                num_partitions=-1,
                replication_factor=-1,
                configs=[],
            )
        results.append(result)
    return {"throttle_time": 0, "topics": results}


async def handle_create_partitions(ctx: RequestContext, request: Any) -> dict[str, Any]:
    """New partitions for existing topics (manual assignments are refused)."""
    counts = {t.name: int(t.count) for t in request.topics}
    manual = [t.name for t in request.topics if t.assignments]
    results: list[tuple[str, ErrorCode, str | None]] = [
        (n, ErrorCode.invalid_request, "manual replica assignments are not supported")
        for n in manual
    ]
    counts = {n: k for n, k in counts.items() if n not in manual}
    if ctx.broker.forwarding is not None and not request.validate_only:
        timeout = max(request.timeout.total_seconds(), 5.0)
        results += await ctx.broker.forwarding.forward_create_partitions(counts, timeout)
    else:
        for name, count in counts.items():
            try:
                ctx.broker.replica_manager.add_partitions(name, count, request.validate_only)
                results.append((name, ErrorCode.none, None))
            except KafkaError as e:
                results.append((name, e.code, e.message))
    return {
        "throttle_time": 0,
        "results": [
            {"name": n, "error_code": code, "error_message": message}
            for n, code, message in results
        ],
    }


async def handle_delete_topics(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if ctx.broker.forwarding is not None:
        return await ctx.broker.forwarding.forward_delete_topics(list(request.topic_names))
    results = []
    for name in request.topic_names:
        code = ErrorCode.none
        try:
            ctx.broker.replica_manager.delete_topic(name)
        except KafkaError as e:
            code = e.code
        results.append({"name": name, "error_code": code, "error_message": None})
    return {"throttle_time": 0, "responses": results}
