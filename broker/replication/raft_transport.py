"""The Raft ``NetworkChannel`` over Kafka connections: outbound requests go to the
destination voter's controller listener as kio entities (``broker.raft.wire``) and
their responses go to the client's message queue; inbound requests go to the same
queue and are answered when the client sends its response envelope.

As the channel contract allows, a message may be lost: a request to a peer that is
down, slow or still busy with our previous request is dropped, and the Raft client's
own timers resend it."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from broker.raft import messages as m
from broker.raft import wire
from broker.raft.driver import RaftMessageQueue
from broker.replication.peer_client import PeerConnection, PeerError
from broker.replication.voters import Voter

log = logging.getLogger(__name__)


def request_source(body: m.RaftRequest) -> int:
    """The sending voter, as each request names it."""
    if isinstance(body, m.VoteRequest):
        return body.candidate_id
    if isinstance(body, m.BeginQuorumEpochRequest | m.EndQuorumEpochRequest):
        return body.leader_id
    return body.replica_id


class RaftTransport:
    def __init__(
        self, node_id: int, voters: dict[int, Voter], timeout_ms: int, queue: RaftMessageQueue
    ) -> None:
        self.node_id = node_id
        self.timeout = timeout_ms / 1000
        self.queue = queue
        self._peers = {
            v.node_id: PeerConnection(v.host, v.port, f"jepka-raft-{node_id}")
            for v in voters.values()
            if v.node_id != node_id
        }
        self._answers: dict[tuple[int, int], asyncio.Future[m.RaftResponse]] = {}
        self._inbound = 0
        self._tasks: set[asyncio.Task[None]] = set()

    def peer_gone(self, node_id: int) -> bool:
        """Whether the last request to that voter found no process behind its
        address (see ``PeerConnection.gone``)."""
        peer = self._peers.get(node_id)
        return peer is not None and peer.gone

    # -- NetworkChannel ------------------------------------------------------------------
    def send(self, envelope: m.Envelope) -> None:
        if not envelope.is_request:
            answer = self._answers.pop((envelope.destination, envelope.correlation_id), None)
            if answer is not None and not answer.done():
                answer.set_result(envelope.body)  # type: ignore[arg-type]
            return
        peer = self._peers.get(envelope.destination)
        if peer is None or peer.busy:
            return
        task = asyncio.get_running_loop().create_task(self._call(peer, envelope))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _call(self, peer: PeerConnection, envelope: m.Envelope) -> None:
        try:
            timeout = self._timeout(envelope.body)
            response = await peer.request(wire.to_wire(envelope.body), timeout)
            body = wire.from_wire(response)
        except (PeerError, wire.WireError) as e:
            log.debug("raft request to %d lost: %s", envelope.destination, e)
            return
        self.queue.add(
            m.Envelope(envelope.destination, self.node_id, envelope.correlation_id, body)
        )

    # -- inbound -------------------------------------------------------------------------
    async def handle(self, entity: Any) -> Any:
        """Answers one inbound Raft request (a kio entity) with the client's response."""
        body = wire.from_wire(entity)
        if isinstance(body, m.RaftResponse):
            raise wire.WireError(f"unexpected {type(entity).__name__}")
        self._inbound += 1
        key = (request_source(body), self._inbound)
        answer: asyncio.Future[m.RaftResponse] = asyncio.get_running_loop().create_future()
        self._answers[key] = answer
        self.queue.add(m.Envelope(key[0], self.node_id, key[1], body))
        try:
            async with asyncio.timeout(self._timeout(body)):
                return wire.to_wire(await answer)
        finally:
            self._answers.pop(key, None)

    def _timeout(self, body: m.RaftRequest | m.RaftResponse) -> float:
        """The request timeout, on top of the time a fetch may wait at the leader."""
        wait_ms = body.max_wait_ms if isinstance(body, m.FetchRequest) else 0
        return self.timeout + wait_ms / 1000

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for peer in self._peers.values():
            peer.close()
