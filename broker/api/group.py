"""Consumer-group APIs: FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups, ListGroups.

Each handler translates between kio's request/response shapes (every version
at once) and :class:`~broker.coordinator.group.coordinator.GroupCoordinator`;
a refusal is a Kafka error code in the response, never a closed connection.
"""

from __future__ import annotations

import datetime
import time
from typing import Any

from broker.api.context import RequestContext
from broker.coordinator.group.membership import JoinRequest, SyncRequest
from broker.coordinator.group.offsets import CommittedOffset
from broker.coordinator.partitioning import CoordinatorType
from broker.errors import ErrorCode, KafkaError

NO_OFFSET = -1
NO_LEADER_EPOCH = -1


def millis(value: datetime.timedelta | int) -> int:
    """kio decodes Kafka's millisecond durations as ``timedelta``."""
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)


def now_ms() -> int:
    return int(time.time() * 1000)


# ---- FindCoordinator -----------------------------------------------------------------


async def handle_find_coordinator(ctx: RequestContext, request: Any) -> dict[str, Any]:
    key_type = getattr(request, "key_type", 0)
    keys = list(request.coordinator_keys) if ctx.api_version >= 4 else [request.key]
    found = [_find_one(ctx, key_type, key) for key in keys]
    if ctx.api_version >= 4:
        return {"throttle_time": 0, "coordinators": found}
    return {"throttle_time": 0, **found[0]}


def _find_one(ctx: RequestContext, key_type: int, key: str) -> dict[str, Any]:
    answer: dict[str, Any] = {"key": key, "node_id": -1, "host": "", "port": -1}
    try:
        kind = CoordinatorType(key_type)
    except ValueError:
        return {**answer, "error_code": ErrorCode.invalid_request, "error_message": "key type"}
    if not key:
        code = (
            ErrorCode.invalid_group_id
            if kind is CoordinatorType.GROUP
            else ErrorCode.invalid_request
        )
        return {**answer, "error_code": code, "error_message": "empty key"}
    node = ctx.broker.coordinators.coordinator_for(kind, key)
    if node is None:
        return {**answer, "error_code": ErrorCode.coordinator_not_available, "error_message": None}
    node_id, host, port = node
    return {
        **answer,
        "node_id": node_id,
        "host": host,
        "port": port,
        "error_code": ErrorCode.none,
        "error_message": None,
    }


# ---- JoinGroup / SyncGroup / Heartbeat / LeaveGroup ----------------------------------------


async def handle_join_group(ctx: RequestContext, request: Any) -> dict[str, Any]:
    session_ms = millis(request.session_timeout)
    join = JoinRequest(
        member_id=request.member_id,
        group_instance_id=getattr(request, "group_instance_id", None),
        client_id=ctx.client_id or "",
        client_host=f"/{ctx.client_host}",
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=millis(getattr(request, "rebalance_timeout", session_ms)),
        protocol_type=request.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in request.protocols],
        require_known_member_id=ctx.api_version >= 4,
    )
    try:
        result = await ctx.broker.coordinators.group.join(request.group_id, join)
    except KafkaError as exc:
        return _join_response(ctx, exc.code, request.member_id)
    nullable = ctx.api_version >= 7
    return {
        "throttle_time": 0,
        "error_code": result.error,
        "generation_id": result.generation,
        "protocol_type": result.protocol_type,
        "protocol_name": result.protocol_name if nullable else (result.protocol_name or ""),
        "leader": result.leader,
        "skip_assignment": result.skip_assignment,
        "member_id": result.member_id,
        "members": [
            {"member_id": m, "group_instance_id": instance, "metadata": metadata}
            for m, instance, metadata in result.members
        ],
    }


def _join_response(ctx: RequestContext, code: ErrorCode, member_id: str) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "error_code": code,
        "generation_id": -1,
        "protocol_type": None,
        "protocol_name": None if ctx.api_version >= 7 else "",
        "leader": "",
        "member_id": member_id,
        "members": [],
    }


async def handle_sync_group(ctx: RequestContext, request: Any) -> dict[str, Any]:
    group = ctx.broker.coordinators.group
    sync = SyncRequest(
        generation=request.generation_id,
        member_id=request.member_id,
        group_instance_id=getattr(request, "group_instance_id", None),
        protocol_type=getattr(request, "protocol_type", None),
        protocol_name=getattr(request, "protocol_name", None),
        assignments={a.member_id: bytes(a.assignment) for a in request.assignments},
    )
    try:
        error, assignment = await group.sync(request.group_id, sync)
    except KafkaError as exc:
        error, assignment = exc.code, b""
    described = group.describe(request.group_id) if error is ErrorCode.none else None
    return {
        "throttle_time": 0,
        "error_code": error,
        "protocol_type": described.protocol_type if described else None,
        "protocol_name": described.protocol_name if described else None,
        "assignment": assignment,
    }


async def handle_heartbeat(ctx: RequestContext, request: Any) -> dict[str, Any]:
    try:
        error = ctx.broker.coordinators.group.heartbeat(
            request.group_id,
            request.generation_id,
            request.member_id,
            getattr(request, "group_instance_id", None),
        )
    except KafkaError as exc:
        error = exc.code
    return {"throttle_time": 0, "error_code": error}


async def handle_leave_group(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if ctx.api_version >= 3:
        leaving = [(m.member_id, m.group_instance_id) for m in request.members]
    else:
        leaving = [(request.member_id, None)]
    try:
        errors = ctx.broker.coordinators.group.leave(request.group_id, leaving)
        top = errors[0] if ctx.api_version < 3 and errors else ErrorCode.none
    except KafkaError as exc:
        errors, top = [exc.code] * len(leaving), exc.code
    return {
        "throttle_time": 0,
        "error_code": top,
        "members": [
            {"member_id": m, "group_instance_id": i, "error_code": e}
            for (m, i), e in zip(leaving, errors, strict=True)
        ],
    }


# ---- OffsetCommit / OffsetFetch ---------------------------------------------------------


def requested_offsets(request: Any) -> dict[tuple[str, int], CommittedOffset]:
    """The partitions of an OffsetCommit or TxnOffsetCommit request."""
    stamp = now_ms()
    return {
        (topic.name, p.partition_index): CommittedOffset(
            p.committed_offset,
            getattr(p, "committed_leader_epoch", NO_LEADER_EPOCH),
            p.committed_metadata or "",
            stamp,
        )
        for topic in request.topics
        for p in topic.partitions
    }


def partition_errors(
    request: Any, errors: dict[tuple[str, int], ErrorCode] | ErrorCode
) -> list[dict[str, Any]]:
    """Per-partition results in request order; one code for all when given one."""
    return [
        {
            "name": topic.name,
            "partitions": [
                {
                    "partition_index": p.partition_index,
                    "error_code": errors
                    if isinstance(errors, ErrorCode)
                    else errors.get((topic.name, p.partition_index), ErrorCode.none),
                }
                for p in topic.partitions
            ],
        }
        for topic in request.topics
    ]


async def handle_offset_commit(ctx: RequestContext, request: Any) -> dict[str, Any]:
    errors: dict[tuple[str, int], ErrorCode] | ErrorCode
    try:
        errors = await ctx.broker.coordinators.group.commit_offsets(
            request.group_id,
            request.generation_id_or_member_epoch,
            request.member_id,
            getattr(request, "group_instance_id", None),
            requested_offsets(request),
        )
    except KafkaError as exc:
        errors = exc.code
    return {"throttle_time": 0, "topics": partition_errors(request, errors)}


async def handle_offset_fetch(ctx: RequestContext, request: Any) -> dict[str, Any]:
    require_stable = getattr(request, "require_stable", False)
    if ctx.api_version >= 8:
        groups = [_fetch_group(ctx, g.group_id, g.topics, require_stable) for g in request.groups]
        return {"throttle_time": 0, "groups": groups}
    one = _fetch_group(ctx, request.group_id, request.topics, require_stable)
    return {"throttle_time": 0, "topics": one["topics"], "error_code": one["error_code"]}


def _fetch_group(
    ctx: RequestContext, group_id: str, topics: Any, require_stable: bool
) -> dict[str, Any]:
    wanted = (
        None if topics is None else [(t.name, p) for t in topics for p in _partition_indexes(t)]
    )
    try:
        found = ctx.broker.coordinators.group.fetch_offsets(group_id, wanted, require_stable)
    except KafkaError as exc:
        return {"group_id": group_id, "error_code": exc.code, "topics": []}
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), (committed, error) in found.items():
        by_topic.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "committed_offset": committed.offset if committed else NO_OFFSET,
                "committed_leader_epoch": committed.leader_epoch if committed else -1,
                "metadata": committed.metadata if committed else "",
                "error_code": error,
            }
        )
    return {
        "group_id": group_id,
        "error_code": ErrorCode.none,
        "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
    }


def _partition_indexes(topic: Any) -> tuple[int, ...]:
    return tuple(getattr(topic, "partition_indexes", ()))


# ---- DescribeGroups / ListGroups ----------------------------------------------------------


async def handle_describe_groups(ctx: RequestContext, request: Any) -> dict[str, Any]:
    group_coordinator = ctx.broker.coordinators.group
    described = []
    for group_id in request.groups:
        entry: dict[str, Any] = {
            "group_id": group_id,
            "group_state": "Dead",
            "protocol_type": "",
            "protocol_data": "",
            "members": [],
            "authorized_operations": -(2**31),
        }
        try:
            group = group_coordinator.describe(group_id)
        except KafkaError as exc:
            described.append({**entry, "error_code": exc.code})
            continue
        if group is not None:
            stable = group.state.value == "Stable"
            entry.update(
                group_state=group.state.value,
                protocol_type=group.protocol_type or "",
                protocol_data=(group.protocol_name or "") if stable else "",
                members=[
                    {
                        "member_id": m.member_id,
                        "group_instance_id": m.group_instance_id,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "member_metadata": m.metadata_for(group.protocol_name or "")
                        if stable
                        else b"",
                        "member_assignment": m.assignment if stable else b"",
                    }
                    for m in group.members.values()
                ],
            )
        described.append({**entry, "error_code": ErrorCode.none})
    return {"throttle_time": 0, "groups": described}


async def handle_delete_groups(ctx: RequestContext, request: Any) -> dict[str, Any]:
    """Each group answered on its own (NOT_COORDINATOR where it lives elsewhere)."""
    results = []
    for group_id in request.groups_names:
        try:
            await ctx.broker.coordinators.group.delete_group(group_id)
            code = ErrorCode.none
        except KafkaError as exc:
            code = exc.code
        results.append({"group_id": group_id, "error_code": code})
    return {"throttle_time": 0, "results": results}


async def handle_list_groups(ctx: RequestContext, request: Any) -> dict[str, Any]:
    states = {s.lower() for s in getattr(request, "states_filter", ())}
    groups = ctx.broker.coordinators.group.list_groups(states or None)
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "groups": [
            {
                "group_id": g.group_id,
                "protocol_type": g.protocol_type or "",
                "group_state": g.state.value,
            }
            for g in groups
        ],
    }
