"""Transaction APIs: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
EndTxn, TxnOffsetCommit and WriteTxnMarkers.

Handlers translate kio shapes to the transaction coordinator (and, for
TxnOffsetCommit, the group coordinator) and back. Older request versions
predate PRODUCER_FENCED, so they receive INVALID_PRODUCER_EPOCH instead, as
Kafka does.
"""

from __future__ import annotations

from typing import Any

from broker.api.group import coordinators, millis, partition_errors, requested_offsets
from broker.api.registry import RequestContext, api
from broker.coordinator.txn.markers import write_markers
from broker.errors import ErrorCode, KafkaError

# The first version of each API that may carry PRODUCER_FENCED (KIP-588).
_PRODUCER_FENCED_SINCE = {22: 4, 24: 2, 25: 2, 26: 2, 28: 3}


def client_code(ctx: RequestContext, code: ErrorCode) -> ErrorCode:
    if code is ErrorCode.producer_fenced and ctx.api_version < _PRODUCER_FENCED_SINCE.get(
        ctx.api_key, 0
    ):
        return ErrorCode.invalid_producer_epoch
    return code


@api(22, 0, 4)
async def handle_init_producer_id(ctx: RequestContext, request: Any) -> dict[str, Any]:
    try:
        producer_id, epoch = await coordinators(ctx).txn.init_producer_id(
            request.transactional_id,
            millis(request.transaction_timeout),
            getattr(request, "producer_id", -1),
            getattr(request, "producer_epoch", -1),
        )
        error = ErrorCode.none
    except KafkaError as exc:
        producer_id, epoch, error = -1, -1, client_code(ctx, exc.code)
    return {
        "throttle_time": 0,
        "error_code": error,
        "producer_id": producer_id,
        "producer_epoch": epoch,
    }


@api(24, 0, 4)
async def handle_add_partitions_to_txn(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if ctx.api_version >= 4:
        results = [
            {
                "transactional_id": t.transactional_id,
                "topic_results": await _add_partitions(
                    ctx, t.transactional_id, t.producer_id, t.producer_epoch, t.topics
                ),
            }
            for t in request.transactions
        ]
        return {"throttle_time": 0, "error_code": ErrorCode.none, "results_by_transaction": results}
    by_topic = await _add_partitions(
        ctx,
        request.v3_and_below_transactional_id,
        request.v3_and_below_producer_id,
        request.v3_and_below_producer_epoch,
        request.v3_and_below_topics,
    )
    return {"throttle_time": 0, "results_by_topic_v3_and_below": by_topic}


async def _add_partitions(
    ctx: RequestContext, transactional_id: str, producer_id: int, epoch: int, topics: Any
) -> list[dict[str, Any]]:
    manager = ctx.broker.replica_manager
    wanted = [(t.name, int(p)) for t in topics for p in t.partitions]
    unknown = {tp for tp in wanted if tp not in manager.partitions}
    errors: dict[tuple[str, int], ErrorCode]
    if unknown:
        errors = {
            tp: ErrorCode.unknown_topic_or_partition
            if tp in unknown
            else ErrorCode.operation_not_attempted
            for tp in wanted
        }
    else:
        try:
            await coordinators(ctx).txn.add_partitions(
                transactional_id, producer_id, epoch, set(wanted)
            )
            code = ErrorCode.none
        except KafkaError as exc:
            code = client_code(ctx, exc.code)
        errors = dict.fromkeys(wanted, code)
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), code in errors.items():
        by_topic.setdefault(topic, []).append(
            {"partition_index": partition, "partition_error_code": code}
        )
    return [{"name": t, "results_by_partition": ps} for t, ps in by_topic.items()]


@api(25, 0, 3)
async def handle_add_offsets_to_txn(ctx: RequestContext, request: Any) -> dict[str, Any]:
    try:
        await coordinators(ctx).txn.add_offsets(
            request.transactional_id, request.producer_id, request.producer_epoch, request.group_id
        )
        error = ErrorCode.none
    except KafkaError as exc:
        error = client_code(ctx, exc.code)
    return {"throttle_time": 0, "error_code": error}


@api(26, 0, 3)
async def handle_end_txn(ctx: RequestContext, request: Any) -> dict[str, Any]:
    try:
        await coordinators(ctx).txn.end_txn(
            request.transactional_id, request.producer_id, request.producer_epoch, request.committed
        )
        error = ErrorCode.none
    except KafkaError as exc:
        error = client_code(ctx, exc.code)
    return {"throttle_time": 0, "error_code": error}


@api(28, 0, 3)
async def handle_txn_offset_commit(ctx: RequestContext, request: Any) -> dict[str, Any]:
    errors: dict[tuple[str, int], ErrorCode] | ErrorCode
    try:
        errors = await coordinators(ctx).group.commit_txn_offsets(
            request.group_id,
            request.producer_id,
            request.producer_epoch,
            getattr(request, "generation_id", -1),
            getattr(request, "member_id", ""),
            getattr(request, "group_instance_id", None),
            requested_offsets(request),
        )
    except KafkaError as exc:
        errors = client_code(ctx, exc.code)
    return {"throttle_time": 0, "topics": partition_errors(request, errors)}


@api(27, 1, 1)
async def handle_write_txn_markers(ctx: RequestContext, request: Any) -> dict[str, Any]:
    """Broker-to-broker in Kafka; here it writes markers to partitions this node
    leads, through the same path the coordinator uses."""
    service = coordinators(ctx)
    answers = []
    for marker in request.markers:
        partitions = [(t.name, int(p)) for t in marker.topics for p in t.partition_indexes]
        results = await write_markers(
            ctx.broker.replica_manager,
            service.group.on_offsets_marker,
            marker.producer_id,
            marker.producer_epoch,
            marker.transaction_result,
            marker.coordinator_epoch,
            partitions,
        )
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), code in results.items():
            by_topic.setdefault(topic, []).append(
                {"partition_index": partition, "error_code": code}
            )
        answers.append(
            {
                "producer_id": marker.producer_id,
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
            }
        )
    return {"markers": answers}
