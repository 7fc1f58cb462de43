"""The leader's side of replication: Fetch requests that carry a replica id. The
follower's fetch offset is its LEO (everything before it is on its log), which may
advance the high watermark once its last fetched epoch shows that its log is a
prefix of ours there; otherwise the answer is a diverging epoch (where the logs
part) and no records. Records are served up to the leader's LEO, not the HW, and
the follower is told the HW and the log start offset, and tells its own (the
leader's low watermark). Followers fetch in incremental sessions (KIP-227,
``fetch_session``): a request names only what changed, and its answer only the
partitions with news for the follower. A request with a stale leader epoch is refused
(FENCED_LEADER_EPOCH), one for a partition this node does not lead gets
NOT_LEADER_OR_FOLLOWER."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from broker.errors import ErrorCode, KafkaError
from broker.replication.fetch_session import FetchContext, FetchSessionCache, named_partitions
from broker.replication.partition import UNKNOWN, ReplicatedPartition, diverging_epoch

if TYPE_CHECKING:
    from broker.server.replica_manager import ReplicaManager


def _leading(manager: ReplicaManager, topic: str, p: Any) -> ReplicatedPartition:
    partition = manager.partitions.get((topic, p.partition))
    if not isinstance(partition, ReplicatedPartition) or not partition.is_leader:
        raise KafkaError(ErrorCode.not_leader_or_follower, f"{topic}-{p.partition}")
    partition.check_leader_epoch(p.current_leader_epoch)
    return partition


def _read(
    manager: ReplicaManager, replica: int, topic: str, p: Any, arrived: bool
) -> dict[str, Any]:
    """The answer for one partition; ``arrived``: the request is new, so its fetch
    offset is the follower's position (a parked request read again on an append
    says nothing new about the follower, as in Kafka's DelayedFetch)."""
    answer: dict[str, Any] = {
        "partition_index": p.partition,
        "error_code": ErrorCode.none,
        "high_watermark": -1,
        "last_stable_offset": -1,
        "log_start_offset": -1,
        "aborted_transactions": None,
        "preferred_read_replica": -1,
        "records": b"",
    }
    try:
        partition = _leading(manager, topic, p)
        plog = partition.log
        answer.update(
            high_watermark=partition.high_watermark,
            last_stable_offset=partition.last_stable_offset,
            log_start_offset=plog.log_start_offset,
        )
        diverging = diverging_epoch(plog, p.fetch_offset, p.last_fetched_epoch)
        if diverging is not None:
            # the follower's log is not a prefix of ours at its fetch offset: it
            # truncates first, and its position counts for nothing until then
            answer["diverging_epoch"] = {"epoch": diverging[0], "end_offset": diverging[1]}
            return answer
        if arrived:
            partition.update_follower(replica, p.fetch_offset, _follower_start(p))
        answer["records"] = plog.read(
            p.fetch_offset, p.partition_max_bytes, plog.next_offset, min_one=True
        )
    except KafkaError as e:
        answer["error_code"] = e.code
    return answer


def _news(p: Any, answer: dict[str, Any]) -> bool:
    """The answer tells the follower something: records, an error, a diverging
    epoch, or a log start offset past its own."""
    return bool(
        answer["records"]
        or answer["error_code"] is not ErrorCode.none
        or "diverging_epoch" in answer
        or 0 <= _follower_start(p) < answer["log_start_offset"]
    )


def _follower_start(p: Any) -> int:
    """The follower's log start offset (Fetch v5+; unknown before)."""
    return getattr(p, "log_start_offset", UNKNOWN)


async def serve_replica_fetch(
    manager: ReplicaManager, request: Any, sessions: FetchSessionCache | None = None
) -> dict[str, Any]:
    """Answers at once if there is data or an error, else waits for an append on
    one of the partitions (up to the request's max wait). With ``sessions``, a
    follower's fetch session (KIP-227) says which partitions are read and which
    answered; without, every request is a full one and no session is made."""
    context = (
        sessions.context(request)
        if sessions is not None
        else FetchContext(named_partitions(request))
    )
    if context.error is not ErrorCode.none:
        return {
            "throttle_time": 0,
            "error_code": context.error,
            "session_id": 0,
            "responses": [],
        }
    wanted = context.partitions
    loop = asyncio.get_running_loop()
    deadline = loop.time() + request.max_wait.total_seconds()
    arrived = True
    while True:
        read = [(t, p, _read(manager, request.replica_id, t, p, arrived)) for t, p in wanted]
        arrived = False
        ready = any(_news(p, answer) for _, p, answer in read)
        remaining = deadline - loop.time()
        if ready or remaining <= 0:
            break
        waiter: asyncio.Future[None] = loop.create_future()
        watched = [
            partition
            for partition in (manager.partitions.get((t, p.partition)) for t, p in wanted)
            if isinstance(partition, ReplicatedPartition)
        ]
        for partition in watched:
            partition.watch_data(waiter)
        try:
            # asyncio.wait, not wait_for: on 3.11 wait_for can swallow a cancellation
            # that races the waiter, and the connection would outlive a shutdown
            await asyncio.wait([waiter], timeout=remaining)
        finally:
            for partition in watched:
                partition.unwatch_data(waiter)
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for topic, answer in context.answers(read):
        by_topic.setdefault(topic, []).append(answer)
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "session_id": context.session_id,
        "responses": [{"topic": name, "partitions": answers} for name, answers in by_topic.items()],
    }
