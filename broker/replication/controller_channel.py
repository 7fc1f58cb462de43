"""Requests from this broker to the active controller (Kafka's
``NodeToControllerChannelManager``): one connection per voter's controller listener,
and every request sent to the voter the quorum currently names leader, again after a
NOT_CONTROLLER, until one answers or the deadline passes."""

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


class ControllerUnavailable(Exception):
    """No active controller answered before the deadline."""


class ControllerChannel:
    def __init__(
        self, node_id: int, voters: dict[int, Voter], active_controller: Callable[[], int | None]
    ) -> None:
        """``active_controller`` gives the quorum leader this node knows, if any."""
        self._active_controller = active_controller
        self._controllers = {
            v.node_id: PeerConnection(v.host, v.port, f"jepka-broker-{node_id}")
            for v in voters.values()
        }

    async def call(self, request: Any, timeout: float) -> Any:
        """Sends ``request`` to the active controller, following leadership changes,
        until it answers with anything but NOT_CONTROLLER; raises
        ``ControllerUnavailable`` after ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            leader = self._active_controller()
            if leader is not None:
                try:
                    answer = await self._controllers[leader].request(request, RETRY_S * 10)
                except PeerError as e:
                    log.debug("controller %d: %s", leader, e)
                else:
                    if getattr(answer, "error_code", None) is not ErrorCode.not_controller:
                        return answer
                    codes = {t.error_code for t in getattr(answer, "topics", ())}
                    if codes and codes != {ErrorCode.not_controller}:
                        return answer
            await asyncio.sleep(RETRY_S)
        raise ControllerUnavailable(f"no active controller answered within {timeout:g} s")

    def close(self) -> None:
        for peer in self._controllers.values():
            peer.close()
