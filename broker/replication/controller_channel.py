"""Requests from this broker to the active controller (Kafka's
``NodeToControllerChannelManager``): one connection per voter's controller listener,
and every request sent to the voter the quorum currently names leader, again after a
NOT_CONTROLLER, a lost connection or an attempt's timeout, until one answers or the
deadline passes. Kafka's broker has several such channels ("heartbeat",
"alter-partition", "forwarding") so that a slow answer on one holds up no other; the
reference broker has two: one for heartbeats, ISR changes, producer-id blocks and
DescribeQuorum, whose attempts wait a second (a read or a heartbeat can go again at
once), and one for the client requests it forwards, whose attempts wait as long as
Kafka's forwarding channel does (``controller.socket.timeout.ms``, 30 s) within the
request's own deadline."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from broker.replication.peer_client import PeerConnection, PeerError
from broker.replication.voters import Voter

log = logging.getLogger(__name__)
RETRY_S = 0.1
#: how long an attempt of the heartbeat channel waits: a heartbeat or an ISR change
#: sent to a controller that stopped answering goes to the next one within a second
HEARTBEAT_ATTEMPT_S = 1.0
#: how long an attempt of the forwarding channel waits: a forwarded CreateTopics sent
#: again after a slow first answer would find its own topic there and tell the
#: client TOPIC_ALREADY_EXISTS
FORWARDING_ATTEMPT_S = 30.0


class ControllerUnavailable(Exception):
    """No active controller answered before the deadline."""


class ControllerChannel:
    def __init__(
        self,
        node_id: int,
        voters: dict[int, Voter],
        active_controller: Callable[[], int | None],
        attempt_s: float = HEARTBEAT_ATTEMPT_S,
    ) -> None:
        """``active_controller`` gives the quorum leader this node knows, if any;
        ``attempt_s`` bounds the wait for one answer before the request is sent again."""
        self._active_controller = active_controller
        self._attempt_s = attempt_s
        self._controllers = {
            v.node_id: PeerConnection(v.host, v.port, f"jepka-broker-{node_id}")
            for v in voters.values()
        }

    async def call(self, request: Any, timeout: float) -> Any:
        """Sends ``request`` to the active controller, following leadership changes
        between attempts (an attempt waits on the controller it went to, as Kafka's
        do), until it answers with anything but NOT_CONTROLLER; raises
        ``ControllerUnavailable`` after ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            leader = self._active_controller()
            if leader is not None:
                try:
                    attempt = min(self._attempt_s, max(deadline - loop.time(), RETRY_S))
                    answer = await self._controllers[leader].request(request, attempt)
                except PeerError as e:
                    log.debug("controller %d: %s", leader, e)
                else:
                    if not _not_controller(answer):
                        return answer
            await asyncio.sleep(RETRY_S)
        raise ControllerUnavailable(f"no active controller answered within {timeout:g} s")

    def close(self) -> None:
        for peer in self._controllers.values():
            peer.close()


def _not_controller(answer: Any) -> bool:
    """Whether ``answer`` says NOT_CONTROLLER: at the top, or (CreateTopics,
    DeleteTopics, CreatePartitions, AlterConfigs, which have no top-level error)
    for every item it answers."""
    if getattr(answer, "error_code", None) is ErrorCode.not_controller:
        return True
    items = [
        *getattr(answer, "topics", ()),
        *getattr(answer, "responses", ()),
        *getattr(answer, "results", ()),
    ]
    codes = {getattr(i, "error_code", None) for i in items}  # DescribeQuorum's topics have none
    return codes == {ErrorCode.not_controller}
