"""The follower's side of replication (Kafka's ``ReplicaFetcherThread``): one fetch
loop per leader broker, fetching every partition this node follows from it with
its replica id, the current leader epoch and its own log start offset, appending
what comes back with the leader's offsets and epochs, and taking the leader's HW
(capped by its own LEO) and log start offset.

After every leader change a follower first asks the new leader, with
OffsetForLeaderEpoch, where its own latest epoch ends in the leader's log and
truncates there (KIP-101) — never blindly to its high watermark, which would lose
acknowledged records or leave the logs diverged. Every fetch also carries the
epoch of the follower's last record, and a leader whose log parts from the
follower's before its fetch offset answers with a diverging epoch instead of
records; the follower truncates to where they agree. An answer counts only while
the partition has the leader, leader epoch and log end its request was sent
for."""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import request as fetch_req
from kio.schema.offset_for_leader_epoch.v3 import request as ofle_req
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta, i64

from broker import bugs
from broker.replication.fetch_session import INITIAL_EPOCH, NO_SESSION, next_epoch
from broker.replication.partition import ReplicatedPartition, truncation_offset
from broker.replication.peer_client import PeerConnection, PeerError

log = logging.getLogger(__name__)
TopicPartition = tuple[str, int]
MAX_WAIT = i32Timedelta.parse(datetime.timedelta(milliseconds=500))
PARTITION_MAX_BYTES = 1 << 20
BACKOFF_S = 0.1


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
        self._sessions: dict[int, FetchSessionState] = {}  # per leader
        self._followed: dict[int, dict[TopicPartition, ReplicatedPartition]] = {}

    def followed(self, leader: int) -> Mapping[TopicPartition, ReplicatedPartition]:
        """The partitions this node follows from ``leader``, as of the last ``update``."""
        return self._followed.get(leader, {})

    def update(self) -> None:
        """Takes the partitions each leader now leads for this node (Kafka's
        ``addFetcherForPartitions`` and ``removeFetcherForPartitions``, told
        after every change of the local replicas) and starts a loop for each
        leader it follows partitions of; each loop fetches its leader's part of
        this map every round."""
        followed: dict[int, dict[TopicPartition, ReplicatedPartition]] = {}
        for tp, p in self.partitions.items():
            if isinstance(p, ReplicatedPartition) and not p.is_leader and p.assignment.leader >= 0:
                followed.setdefault(p.assignment.leader, {})[tp] = p
        self._followed = followed
        for leader in followed:
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
                    if (session := self._sessions.get(leader)) is not None:
                        session.reset()  # a new connection starts a new session
                try:
                    await self._truncate_where_needed(connection, leader, parts)
                    await self._fetch_once(connection, leader, parts)
                except PeerError as e:
                    log.debug("fetch from %d: %s", leader, e)
                    await asyncio.sleep(BACKOFF_S)
        except Exception:
            log.exception("replica fetcher for leader %d failed", leader)
        finally:
            if connection is not None:
                connection.close()

    async def _truncate_where_needed(
        self,
        connection: PeerConnection,
        leader: int,
        parts: Mapping[TopicPartition, ReplicatedPartition],
    ) -> None:
        stale = {tp: p for tp, p in parts.items() if self._synced.get(tp) != p.leader_epoch}
        if not stale:
            return
        if bugs.active("hw-truncation"):  # pre-KIP-101: to the HW, without asking the leader
            for tp, p in stale.items():
                p.truncate_to(p.high_watermark)
                self._synced[tp] = p.leader_epoch
            return
        sent = _fetch_states(stale)  # with our latest epoch
        request = ofle_req.OffsetForLeaderEpochRequest(
            replica_id=BrokerId(self.node_id),
            topics=tuple(
                ofle_req.OffsetForLeaderTopic(
                    topic=TopicName(tp[0]),
                    partitions=(
                        ofle_req.OffsetForLeaderPartition(
                            partition=i32(tp[1]),
                            current_leader_epoch=i32(p.leader_epoch),
                            leader_epoch=i32(max(sent[tp].last_fetched_epoch, 0)),
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
                if not sent[tp].holds(leader, partition):
                    continue  # asked of a leader or epoch that is no longer current
                asked = sent[tp].last_fetched_epoch
                cut = truncation_offset(partition, asked, answer.leader_epoch, answer.end_offset)
                _truncate(tp, partition, cut, asked)
                self._synced[tp] = partition.leader_epoch

    async def _fetch_once(
        self,
        connection: PeerConnection,
        leader: int,
        parts: Mapping[TopicPartition, ReplicatedPartition],
    ) -> None:
        ready = {tp: p for tp, p in parts.items() if self._synced.get(tp) == p.leader_epoch}
        if not ready:
            await asyncio.sleep(BACKOFF_S)
            return
        session = self._sessions.setdefault(leader, FetchSessionState())
        sent = _fetch_states(ready)
        changed, forgotten = session.delta(sent)
        by_topic: dict[str, list[Any]] = {}
        for (topic, index), state in changed.items():
            by_topic.setdefault(topic, []).append(
                fetch_req.FetchPartition(
                    partition=i32(index),
                    current_leader_epoch=i32(state.current_leader_epoch),
                    fetch_offset=i64(state.fetch_offset),
                    last_fetched_epoch=i32(state.last_fetched_epoch),
                    log_start_offset=i64(state.log_start_offset),
                    partition_max_bytes=i32(PARTITION_MAX_BYTES),
                )
            )
        gone: dict[str, list[int]] = {}
        for topic, index in forgotten:
            gone.setdefault(topic, []).append(index)
        request = fetch_req.FetchRequest(
            replica_id=BrokerId(self.node_id),
            max_wait=MAX_WAIT,
            min_bytes=i32(1),
            max_bytes=i32(64 << 20),
            isolation_level=i8(0),
            session_id=i32(session.id),
            session_epoch=i32(session.epoch),
            topics=tuple(
                fetch_req.FetchTopic(topic=TopicName(t), partitions=tuple(ps))
                for t, ps in by_topic.items()
            ),
            forgotten_topics_data=tuple(
                fetch_req.ForgottenTopic(topic=TopicName(t), partitions=tuple(i32(i) for i in ps))
                for t, ps in gone.items()
            ),
        )
        try:
            response = await connection.request(request, 5)
        except PeerError:
            session.reset()  # the leader may or may not have taken this epoch
            raise
        if response.error_code is not ErrorCode.none:  # the session is gone or out of step
            log.debug("fetch session with %d: %s; starting a new one", leader, response.error_code)
            session.reset(known=response.error_code is not ErrorCode.fetch_session_id_not_found)
            return
        session.sent(response.session_id, sent)
        errors = False
        for topic in response.responses:
            for answer in topic.partitions:
                tp = (topic.topic, answer.partition_index)
                partition = ready.get(tp)
                if partition is None or not sent[tp].holds(leader, partition):
                    # leader, epoch or our log changed since the request: the next
                    # request starts a new session, so nothing it said is lost
                    session.reset()
                    continue
                diverging = answer.diverging_epoch
                if diverging.epoch >= 0 or diverging.end_offset >= 0:
                    asked = sent[tp].last_fetched_epoch
                    cut = truncation_offset(partition, asked, diverging.epoch, diverging.end_offset)
                    _truncate(tp, partition, cut, asked)
                elif answer.error_code is ErrorCode.offset_out_of_range:
                    errors = True
                    handle_out_of_range(tp, partition, answer.log_start_offset)
                elif answer.error_code is not ErrorCode.none:
                    errors = True
                else:
                    records = bytes(answer.records or b"")
                    partition.append_as_follower(
                        records, answer.high_watermark, answer.log_start_offset
                    )
        if errors:
            await asyncio.sleep(BACKOFF_S)


class _FetchState(NamedTuple):
    """What a follower's request says of one partition; a session's leader keeps
    the last one sent. The answer counts only while the partition still has the
    request's leader, leader epoch and log end."""

    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    log_start_offset: int

    def holds(self, leader: int, partition: ReplicatedPartition) -> bool:
        return (
            not partition.is_leader
            and partition.assignment.leader == leader
            and partition.leader_epoch == self.current_leader_epoch
            and partition.log.next_offset == self.fetch_offset
        )


def _fetch_states(
    parts: Mapping[TopicPartition, ReplicatedPartition],
) -> dict[TopicPartition, _FetchState]:
    """Each partition's state as a request is sent for it, in one pass: a loop
    computes them for every followed partition on every round."""
    # pre-KIP-101 (the hw-truncation bug), replication knows no epochs at all
    epochless = bugs.active("hw-truncation")
    states = {}
    for tp, p in parts.items():
        log = p.log
        epoch = -1 if epochless else log.epochs.latest_epoch
        states[tp] = _FetchState(p.leader_epoch, log.next_offset, epoch, log.log_start_offset)
    return states


class FetchSessionState:
    """The follower's side of its fetch session with one leader (Kafka's
    ``FetchSessionHandler``): the session id and the epoch of the next request,
    and each partition's fetch state as the leader holds it. A new session (id 0,
    epoch 0) sends everything; then a request names only the partitions whose
    state changed, and those no longer fetched as forgotten."""

    def __init__(self) -> None:
        self.id = NO_SESSION
        self.epoch = INITIAL_EPOCH
        self._held: dict[TopicPartition, _FetchState] = {}

    def delta(
        self, wanted: dict[TopicPartition, _FetchState]
    ) -> tuple[dict[TopicPartition, _FetchState], list[TopicPartition]]:
        """The partitions to name in the next request, and the ones to forget."""
        if self.epoch == INITIAL_EPOCH:
            return dict(wanted), []
        changed = {tp: s for tp, s in wanted.items() if self._held.get(tp) != s}
        return changed, [tp for tp in self._held if tp not in wanted]

    def sent(self, session_id: int, wanted: dict[TopicPartition, _FetchState]) -> None:
        """A request was answered without a session error: the leader holds
        ``wanted``. A full request answered with session id 0 made no session,
        so the next one is full again."""
        if self.epoch == INITIAL_EPOCH:
            self.id = session_id
            if session_id == NO_SESSION:
                return
        self.epoch = next_epoch(self.epoch)
        self._held = dict(wanted)

    def reset(self, known: bool = True) -> None:
        """Starts a new session with the next request. While the leader may
        still hold the old one (``known``), that request carries its id, and
        the leader closes it before making the new one (Kafka's
        ``FetchMetadata.nextCloseExisting``), so it takes no cache slot."""
        if not known:
            self.id = NO_SESSION
        self.epoch, self._held = INITIAL_EPOCH, {}


def _truncate(tp: TopicPartition, partition: ReplicatedPartition, cut: int, epoch: int) -> None:
    """Cuts the log where it agrees with the leader's; at its end, only the
    epochs that start there go (see ``Log.truncate_to``)."""
    if cut < partition.log.next_offset:
        log.info(
            "truncating %s-%d from %d to %d (epoch %d ends there on the leader)",
            *tp, partition.log.next_offset, cut, epoch,
        )  # fmt: skip
    partition.truncate_to(min(cut, partition.log.next_offset))


def handle_out_of_range(
    tp: TopicPartition, partition: ReplicatedPartition, leader_start: int
) -> None:
    """OFFSET_OUT_OF_RANGE: a log that ends before the leader's log start starts
    over there (Kafka's handleOutOfRangeError); one that ends past the leader's
    log end is cut by the next fetch's diverging epoch."""
    if leader_start > partition.log.next_offset:
        log.info(
            "%s-%d ends at %d, before the leader's log start %d: starting over there",
            *tp, partition.log.next_offset, leader_start,
        )  # fmt: skip
        partition.truncate_fully_and_start_at(leader_start)
