"""Incremental fetch sessions for followers (KIP-227, Kafka's ``FetchSession``
and ``FetchManager``), on the leader's side.

Without a session every replica fetch names every partition the follower has
from this leader, and every answer carries all of them: with the internal
topics' 50 + 50 partitions that is some 35 partitions encoded, read and decoded
per fetch round, while an acks=all write needs only one of them to move. With
a session the leader remembers each partition's fetch state: a follower's
request names only the partitions whose fetch state changed (and those it drops,
as forgotten), and the answer only the partitions with something to say —
records, an error, a diverging epoch, or a high watermark or log start offset
other than the one last sent in this session.

Request metadata, as in Kafka:

- epoch 0 (initial): a full request; any session with the given id is closed,
  a new one is created, and its id answers with the full response;
- epoch -1 (final): a full request without a session (the given one is closed);
- epoch > 0: an incremental request in the session with the given id, which
  must expect exactly this epoch (else INVALID_FETCH_SESSION_EPOCH; an unknown
  id is FETCH_SESSION_ID_NOT_FOUND); the follower then starts a new session.

The leader reads every partition of the session on each request, as if the
request had named them all with their cached fetch state: a follower's
position, and with it the ISR lag clock, is taken from every partition every
time, as in a full request.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from broker.errors import ErrorCode

TopicPartition = tuple[str, int]
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
NO_SESSION = 0
#: Kafka's max.incremental.fetch.session.cache.slots
CACHE_SLOTS = 1000
_MAX_EPOCH = 2**31 - 1


def next_epoch(epoch: int) -> int:
    """Kafka's FetchMetadata.nextEpoch: 1, 2, ... and back to 1 after the largest."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _MAX_EPOCH else epoch + 1


def named_partitions(request: Any) -> list[tuple[str, Any]]:
    """The partitions a fetch request names, as (topic, request partition)."""
    return [(t.topic, p) for t in request.topics for p in t.partitions]


@dataclass(slots=True)
class CachedPartition:
    """A partition of a session: the follower's last sent fetch state (a request
    partition) and what the leader last told it."""

    fetch: Any
    high_watermark: int = -1
    log_start_offset: int = -1

    def must_respond(self, answer: dict[str, Any]) -> bool:
        """Kafka's CachedPartition.maybeUpdateResponseData: the answer goes out if
        it carries records, an error or a diverging epoch, or a high watermark or
        log start offset not sent yet; those are then remembered as sent. An
        error or a diverging epoch forgets the HW, so that the partition is
        sent again after: the follower takes no HW from either (after a
        truncation it may be at the log end, where nothing else would)."""
        respond = bool(answer["records"]) or "diverging_epoch" in answer
        if answer["high_watermark"] != self.high_watermark:
            respond = True
            self.high_watermark = answer["high_watermark"]
        if answer["log_start_offset"] != self.log_start_offset:
            respond = True
            self.log_start_offset = answer["log_start_offset"]
        if answer["error_code"] is not ErrorCode.none or "diverging_epoch" in answer:
            respond = True
            self.high_watermark = -1
        return respond


@dataclass(slots=True)
class FetchSession:
    id: int
    replica: int
    epoch: int  # the epoch the next incremental request must carry
    partitions: dict[TopicPartition, CachedPartition] = field(default_factory=dict)


@dataclass(slots=True)
class FetchContext:
    """How one request is served: the partitions to read (the request's, or the
    whole session's) and whether the answer carries all or only what changed."""

    partitions: list[tuple[str, Any]]
    session: FetchSession | None = None
    incremental: bool = False
    error: ErrorCode = ErrorCode.none

    @property
    def session_id(self) -> int:
        return NO_SESSION if self.session is None else self.session.id

    def answers(
        self, read: list[tuple[str, Any, dict[str, Any]]]
    ) -> list[tuple[str, dict[str, Any]]]:
        """The ``(topic, answer)`` pairs the response carries, remembering what
        this session's follower is told."""
        if self.session is None:
            return [(topic, answer) for topic, _, answer in read]
        out = []
        for topic, p, answer in read:
            cached = self.session.partitions.get((topic, p.partition))
            changed = cached.must_respond(answer) if cached is not None else True
            if changed or not self.incremental:
                out.append((topic, answer))
        return out


class FetchSessionCache:
    """The leader's sessions, the least recently used evicted beyond ``slots``."""

    def __init__(self, slots: int = CACHE_SLOTS) -> None:
        self.slots = slots
        self._sessions: OrderedDict[int, FetchSession] = OrderedDict()
        self._random = random.Random()

    def __len__(self) -> int:
        return len(self._sessions)

    def context(self, request: Any) -> FetchContext:
        """Resolves a replica fetch's session metadata (Kafka's FetchManager.newContext)."""
        session_id = int(getattr(request, "session_id", NO_SESSION))
        epoch = int(getattr(request, "session_epoch", FINAL_EPOCH))
        named = named_partitions(request)
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            self._sessions.pop(session_id, None)
            if epoch == FINAL_EPOCH:
                return FetchContext(named)
            session = self._create(int(request.replica_id))
            for topic, p in named:
                session.partitions[(topic, p.partition)] = CachedPartition(p)
            return FetchContext(named, session)
        session = self._sessions.get(session_id)
        if session is None or session.replica != request.replica_id:
            return FetchContext([], error=ErrorCode.fetch_session_id_not_found)
        if session.epoch != epoch:
            return FetchContext([], error=ErrorCode.invalid_fetch_session_epoch)
        self._sessions.move_to_end(session_id)
        session.epoch = next_epoch(session.epoch)
        for topic, p in named:
            cached = session.partitions.get((topic, p.partition))
            if cached is None:
                session.partitions[(topic, p.partition)] = CachedPartition(p)
            else:
                cached.fetch = p
        for forgotten in getattr(request, "forgotten_topics_data", ()):
            for index in forgotten.partitions:
                session.partitions.pop((forgotten.topic, int(index)), None)
        everything = [(tp[0], cached.fetch) for tp, cached in session.partitions.items()]
        return FetchContext(everything, session, incremental=True)

    def _create(self, replica: int) -> FetchSession:
        while len(self._sessions) >= self.slots:
            self._sessions.popitem(last=False)
        session_id = NO_SESSION  # random, as Kafka's: a restarted leader knows none of the old
        while session_id == NO_SESSION or session_id in self._sessions:
            session_id = self._random.randrange(1, _MAX_EPOCH)
        session = FetchSession(session_id, replica, next_epoch(INITIAL_EPOCH))
        self._sessions[session_id] = session
        return session
