"""The follower's side of replication (Kafka's ``ReplicaFetcherThread``): one fetch
loop per leader broker, fetching every partition this node follows from it with
its replica id and the current leader epoch, appending what comes back with the
leader's offsets and epochs, and taking the leader's HW (capped by its own LEO).

After every leader change a follower first asks the new leader, with
OffsetForLeaderEpoch, where its own latest epoch ends in the leader's log and
truncates there (KIP-101) — never blindly to its high watermark, which would lose
acknowledged records or leave the logs diverged."""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import request as fetch_req
from kio.schema.offset_for_leader_epoch.v3 import request as ofle_req
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta, i64

from broker import bugs
from broker.replication.partition import ReplicatedPartition, end_offset_for_epoch
from broker.replication.peer_client import PeerConnection, PeerError

log = logging.getLogger(__name__)
TopicPartition = tuple[str, int]
MAX_WAIT = i32Timedelta.parse(datetime.timedelta(milliseconds=500))
PARTITION_MAX_BYTES = 1 << 20
BACKOFF_S = 0.1


def latest_epoch(partition: ReplicatedPartition) -> int:
    """The latest leader epoch in the local epoch cache (-1 if none)."""
    return partition.log.epochs.latest_epoch


class ReplicaFetchers:
    def __init__(
        self,
        node_id: int,
        partitions: dict[TopicPartition, Any],
        address_of: Callable[[int], tuple[str, int] | None],
    ) -> None:
        """``address_of`` gives a broker's (host, port) from the metadata."""
        self.node_id = node_id
        self.partitions = partitions
        self.address_of = address_of
        self._loops: dict[int, asyncio.Task[None]] = {}
        self._synced: dict[TopicPartition, int] = {}

    def followed(self, leader: int) -> dict[TopicPartition, ReplicatedPartition]:
        return {
            tp: p
            for tp, p in self.partitions.items()
            if isinstance(p, ReplicatedPartition) and p.assignment.leader == leader != self.node_id
        }

    def update(self) -> None:
        """Starts a loop for each leader this node now follows partitions of."""
        leaders = {
            p.assignment.leader
            for p in self.partitions.values()
            if isinstance(p, ReplicatedPartition) and not p.is_leader and p.assignment.leader >= 0
        }
        for leader in leaders:
            loop = self._loops.get(leader)
            if loop is None or loop.done():
                self._loops[leader] = asyncio.get_running_loop().create_task(self._run(leader))

    async def stop(self) -> None:
        for task in self._loops.values():
            task.cancel()
        await asyncio.gather(*self._loops.values(), return_exceptions=True)

    async def _run(self, leader: int) -> None:
        connection: PeerConnection | None = None
        try:
            while parts := self.followed(leader):
                address = self.address_of(leader)
                if address is None:
                    await asyncio.sleep(BACKOFF_S)
                    continue
                if connection is None or (connection.host, connection.port) != address:
                    connection = PeerConnection(*address, f"jepka-replica-{self.node_id}")
                try:
                    await self._truncate_where_needed(connection, parts)
                    await self._fetch_once(connection, parts)
                except PeerError as e:
                    log.debug("fetch from %d: %s", leader, e)
                    await asyncio.sleep(BACKOFF_S)
        except Exception:
            log.exception("replica fetcher for leader %d failed", leader)
        finally:
            if connection is not None:
                connection.close()

    async def _truncate_where_needed(
        self, connection: PeerConnection, parts: dict[TopicPartition, ReplicatedPartition]
    ) -> None:
        stale = {tp: p for tp, p in parts.items() if self._synced.get(tp) != p.leader_epoch}
        if not stale:
            return
        if bugs.active("hw-truncation"):  # pre-KIP-101: to the HW, without asking the leader
            for tp, partition in stale.items():
                partition.truncate_to(partition.high_watermark)
                self._synced[tp] = partition.leader_epoch
            return
        asked = {tp: latest_epoch(p) for tp, p in stale.items()}
        request = ofle_req.OffsetForLeaderEpochRequest(
            replica_id=BrokerId(self.node_id),
            topics=tuple(
                ofle_req.OffsetForLeaderTopic(
                    topic=TopicName(tp[0]),
                    partitions=(
                        ofle_req.OffsetForLeaderPartition(
                            partition=i32(tp[1]),
                            current_leader_epoch=i32(p.leader_epoch),
                            leader_epoch=i32(max(asked[tp], 0)),
                        ),
                    ),
                )
                for tp, p in stale.items()
            ),
        )
        response = await connection.request(request, 5)
        for topic in response.topics:
            for answer in topic.partitions:
                tp = (topic.topic, answer.partition)
                partition = stale.get(tp)
                if partition is None or answer.error_code is not ErrorCode.none:
                    continue
                if asked[tp] < 0:
                    cut = partition.log.next_offset  # nothing of ours to reconcile
                elif answer.leader_epoch < 0:
                    cut = partition.high_watermark  # the leader knows no epoch of ours
                elif answer.leader_epoch != asked[tp]:
                    # KIP-279: the leader lacks our epoch; its answer is for an older
                    # one, where our log may end earlier than the leader's
                    _, ours = end_offset_for_epoch(partition.log, answer.leader_epoch)
                    cut = min(answer.end_offset, ours, partition.log.next_offset)
                else:
                    cut = min(answer.end_offset, partition.log.next_offset)
                if cut < partition.log.next_offset:
                    log.info(
                        "truncating %s-%d from %d to %d (epoch %d ends there on the leader)",
                        *tp, partition.log.next_offset, cut, asked[tp],
                    )  # fmt: skip
                    partition.truncate_to(cut)
                self._synced[tp] = partition.leader_epoch

    async def _fetch_once(
        self, connection: PeerConnection, parts: dict[TopicPartition, ReplicatedPartition]
    ) -> None:
        ready = {tp: p for tp, p in parts.items() if self._synced.get(tp) == p.leader_epoch}
        if not ready:
            await asyncio.sleep(BACKOFF_S)
            return
        by_topic: dict[str, list[Any]] = {}
        for (topic, index), p in ready.items():
            by_topic.setdefault(topic, []).append(
                fetch_req.FetchPartition(
                    partition=i32(index),
                    current_leader_epoch=i32(p.leader_epoch),
                    fetch_offset=i64(p.log.next_offset),
                    last_fetched_epoch=i32(-1),
                    log_start_offset=i64(-1),
                    partition_max_bytes=i32(PARTITION_MAX_BYTES),
                )
            )
        request = fetch_req.FetchRequest(
            replica_id=BrokerId(self.node_id),
            max_wait=MAX_WAIT,
            min_bytes=i32(1),
            max_bytes=i32(64 << 20),
            isolation_level=i8(0),
            topics=tuple(
                fetch_req.FetchTopic(topic=TopicName(t), partitions=tuple(ps))
                for t, ps in by_topic.items()
            ),
            forgotten_topics_data=(),
        )
        response = await connection.request(request, 5)
        errors = False
        for topic in response.responses:
            for answer in topic.partitions:
                partition = ready.get((topic.topic, answer.partition_index))
                if partition is None or partition.is_leader:
                    continue
                if answer.error_code is not ErrorCode.none:
                    errors = True
                    continue
                if partition.log.next_offset != self._expected(request, topic.topic, answer):
                    continue  # our log moved (a truncation) since the request
                partition.append_as_follower(bytes(answer.records or b""), answer.high_watermark)
        if errors:
            await asyncio.sleep(BACKOFF_S)

    @staticmethod
    def _expected(request: Any, topic: str, answer: Any) -> int:
        for t in request.topics:
            if t.topic == topic:
                for p in t.partitions:
                    if p.partition == answer.partition_index:
                        return int(p.fetch_offset)
        return -1
