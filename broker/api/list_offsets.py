"""ListOffsets: earliest (-2), latest (-1, the HW or, for read_committed, the
LSO), max timestamp (-3) and first offset at or after a timestamp."""

from __future__ import annotations

from typing import Any

from broker.api.context import RequestContext
from broker.errors import ErrorCode, KafkaError
from broker.server.partition import Partition

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
READ_COMMITTED = 1


def lookup(partition: Partition, timestamp: int, read_committed: bool) -> tuple[int, int]:
    """``(offset, timestamp)`` answering one ListOffsets query."""
    plog = partition.log
    if timestamp == LATEST:
        partition.check_latest_available()
        return (partition.last_stable_offset if read_committed else partition.high_watermark), -1
    if timestamp == EARLIEST:
        return plog.log_start_offset, -1
    if timestamp == MAX_TIMESTAMP:
        found = plog.max_timestamp()
    elif timestamp >= 0:
        found = plog.offset_for_timestamp(timestamp)
    else:
        raise KafkaError(ErrorCode.invalid_request, f"timestamp {timestamp}")
    if found is None or found[0] >= partition.high_watermark:
        return -1, -1
    return found


async def handle_list_offsets(ctx: RequestContext, request: Any) -> dict[str, Any]:
    read_committed = getattr(request, "isolation_level", 0) == READ_COMMITTED
    topics = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            entry: dict[str, Any] = {
                "partition_index": p.partition_index,
                "error_code": ErrorCode.none,
                "timestamp": -1,
                "offset": -1,
                "leader_epoch": -1,
            }
            try:
                partition = ctx.broker.replica_manager.partition(topic.name, p.partition_index)
                partition.check_leader_epoch(getattr(p, "current_leader_epoch", -1))
                partition.check_leader(ctx.broker.node_id)
                entry["offset"], entry["timestamp"] = lookup(partition, p.timestamp, read_committed)
                entry["leader_epoch"] = partition.leader_epoch
            except KafkaError as e:
                entry["error_code"] = e.code
            partitions.append(entry)
        topics.append({"name": topic.name, "partitions": partitions})
    return {"throttle_time": 0, "topics": topics}
