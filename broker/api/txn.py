"""Transaction APIs: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
EndTxn, TxnOffsetCommit, WriteTxnMarkers, DescribeTransactions and
ListTransactions.

Handlers translate kio shapes to the transaction coordinator (and, for
TxnOffsetCommit, the group coordinator) and back. Older request versions
predate PRODUCER_FENCED, so they receive INVALID_PRODUCER_EPOCH instead, as
Kafka does.
"""

from __future__ import annotations

import datetime
import time
from typing import Any

from broker.api.context import RequestContext
from broker.api.group import millis, partition_errors, requested_offsets
from broker.coordinator.txn.markers import TxnMarker, append_local
from broker.coordinator.txn.state import TransactionState
from broker.errors import ErrorCode, KafkaError

# The first version of each API that may carry PRODUCER_FENCED (KIP-588).
_PRODUCER_FENCED_SINCE = {22: 4, 24: 2, 25: 2, 26: 2, 28: 3}


def client_code(ctx: RequestContext, code: ErrorCode) -> ErrorCode:
    if code is ErrorCode.producer_fenced and ctx.api_version < _PRODUCER_FENCED_SINCE.get(
        ctx.api_key, 0
    ):
        return ErrorCode.invalid_producer_epoch
    return code


async def handle_init_producer_id(ctx: RequestContext, request: Any) -> dict[str, Any]:
    try:
        producer_id, epoch = await ctx.broker.coordinators.txn.init_producer_id(
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


async def handle_add_partitions_to_txn(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if ctx.api_version >= 4:
        results = [
            {
                "transactional_id": t.transactional_id,
                "topic_results": _verify_partitions(ctx, t)
                if t.verify_only
                else await _add_partitions(
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


def _verify_partitions(ctx: RequestContext, txn: Any) -> list[dict[str, Any]]:
    """A partition leader's KIP-890 question (verify_only): adds nothing."""
    wanted = {(t.name, int(p)) for t in txn.topics for p in t.partitions}
    try:
        errors = ctx.broker.coordinators.txn.verify(
            txn.transactional_id, txn.producer_id, txn.producer_epoch, wanted
        )
    except KafkaError as exc:  # not the coordinator, or still loading
        errors = dict.fromkeys(wanted, exc.code)
    return _by_topic(errors)


def _by_topic(errors: dict[tuple[str, int], ErrorCode]) -> list[dict[str, Any]]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), code in sorted(errors.items()):
        by_topic.setdefault(topic, []).append(
            {"partition_index": partition, "partition_error_code": code}
        )
    return [{"name": t, "results_by_partition": ps} for t, ps in by_topic.items()]


async def _add_partitions(
    ctx: RequestContext, transactional_id: str, producer_id: int, epoch: int, topics: Any
) -> list[dict[str, Any]]:
    wanted = [(t.name, int(p)) for t in topics for p in t.partitions]
    # the cluster's partitions (Kafka's metadata cache), not the ones hosted here:
    # a coordinator need not be a replica of its transactions' partitions
    unknown = {tp for tp in wanted if not ctx.broker.topics.contains(*tp)}
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
            await ctx.broker.coordinators.txn.add_partitions(
                transactional_id, producer_id, epoch, set(wanted)
            )
            code = ErrorCode.none
        except KafkaError as exc:
            code = client_code(ctx, exc.code)
        errors = dict.fromkeys(wanted, code)
    return _by_topic(errors)


async def handle_add_offsets_to_txn(ctx: RequestContext, request: Any) -> dict[str, Any]:
    try:
        await ctx.broker.coordinators.txn.add_offsets(
            request.transactional_id, request.producer_id, request.producer_epoch, request.group_id
        )
        error = ErrorCode.none
    except KafkaError as exc:
        error = client_code(ctx, exc.code)
    return {"throttle_time": 0, "error_code": error}


async def handle_end_txn(ctx: RequestContext, request: Any) -> dict[str, Any]:
    try:
        await ctx.broker.coordinators.txn.end_txn(
            request.transactional_id, request.producer_id, request.producer_epoch, request.committed
        )
        error = ErrorCode.none
    except KafkaError as exc:
        error = client_code(ctx, exc.code)
    return {"throttle_time": 0, "error_code": error}


async def handle_txn_offset_commit(ctx: RequestContext, request: Any) -> dict[str, Any]:
    errors: dict[tuple[str, int], ErrorCode] | ErrorCode
    try:
        errors = await ctx.broker.coordinators.group.commit_txn_offsets(
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


async def handle_write_txn_markers(ctx: RequestContext, request: Any) -> dict[str, Any]:
    """Broker-to-broker: a transaction coordinator's markers for partitions this
    node leads, answered once each is replicated (or with its error)."""
    service = ctx.broker.coordinators
    answers = []
    for marker in request.markers:
        partitions = [(t.name, int(p)) for t in marker.topics for p in t.partition_indexes]
        entry = TxnMarker(
            marker.producer_id,
            marker.producer_epoch,
            marker.transaction_result,
            marker.coordinator_epoch,
        )
        results = await append_local(
            ctx.broker.replica_manager, service.group.on_offsets_marker, entry, partitions
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


def _start_time(ms: int) -> datetime.datetime:
    """kio writes this field from a datetime. Kafka answers -1 for a transaction
    not begun and 0 (the schema default) for an error entry."""
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)


async def handle_describe_transactions(ctx: RequestContext, request: Any) -> dict[str, Any]:
    states = []
    for txn_id in request.transactional_ids:
        entry: dict[str, Any] = {
            "transactional_id": txn_id,
            "error_code": ErrorCode.none,
            "transaction_state": "",
            "transaction_timeout": 0,
            "transaction_start_time": _start_time(0),
            "producer_id": -1,
            "producer_epoch": -1,
            "topics": [],
        }
        try:
            snapshot = ctx.broker.coordinators.txn.describe(txn_id)
        except KafkaError as exc:
            states.append({**entry, "error_code": exc.code})
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(snapshot.partitions):
            by_topic.setdefault(topic, []).append(partition)
        entry.update(
            transaction_state=snapshot.state.kafka_name,
            transaction_timeout=snapshot.timeout_ms,
            transaction_start_time=_start_time(snapshot.start_ms),
            producer_id=snapshot.producer_id,
            producer_epoch=snapshot.producer_epoch,
            topics=[{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
        )
        states.append(entry)
    return {"throttle_time": 0, "transaction_states": states}


async def handle_list_transactions(ctx: RequestContext, request: Any) -> dict[str, Any]:
    known = {state.kafka_name for state in TransactionState}
    wanted = set(request.state_filters)
    pids = set(request.producer_id_filters)
    min_age_ms = getattr(request, "duration_filter", -1)
    now = int(time.time() * 1000)
    listed = [
        {
            "transactional_id": txn_id,
            "producer_id": snapshot.producer_id,
            "transaction_state": snapshot.state.kafka_name,
        }
        for txn_id, snapshot in ctx.broker.coordinators.txn.list_transactions()
        if (not wanted or snapshot.state.kafka_name in wanted)
        and (not pids or snapshot.producer_id in pids)
        and (min_age_ms < 0 or (snapshot.start_ms >= 0 and now - snapshot.start_ms >= min_age_ms))
    ]
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "unknown_state_filters": sorted(wanted - known),
        "transaction_states": listed,
    }
