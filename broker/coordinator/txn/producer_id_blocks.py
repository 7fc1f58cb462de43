"""Producer ids drawn from blocks the active controller hands out (Kafka's
``RPCProducerIdManager``): AllocateProducerIds to the controller, which records
each block in the metadata log (``ProducerIdsRecord``) before answering, so no
two nodes, and no node before and after a crash or a controller failover, ever
hand out the same id. A producer waits for the controller once per block.

The wire halves (the broker's request, the controller's handler) live here
beside their only user."""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from kio.schema.allocate_producer_ids.v0 import request as api_req
from kio.schema.allocate_producer_ids.v0 import response as api_resp
from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId, ProducerId
from kio.static.primitive import i32, i32Timedelta, i64

from broker.controller.quorum_controller import NotControllerError, QuorumController
from broker.errors import KafkaError

log = logging.getLogger(__name__)

TIMEOUT_S = 5.0

CallController = Callable[[Any, float], Awaitable[Any]]


def allocate_request(broker_id: int, broker_epoch: int) -> api_req.AllocateProducerIdsRequest:
    return api_req.AllocateProducerIdsRequest(
        broker_id=BrokerId(broker_id), broker_epoch=i64(broker_epoch)
    )


async def handle_allocate_producer_ids(
    controller: QuorumController, request: Any
) -> api_resp.AllocateProducerIdsResponse:
    """The controller's side: a block, answered once its record is committed."""
    start, length = -1, 0
    try:
        answer = await asyncio.wrap_future(
            controller.allocate_producer_ids(int(request.broker_id), int(request.broker_epoch))
        )
        code = answer.error_code
        start, length = answer.producer_id_start, answer.producer_id_len
    except NotControllerError:
        code = ErrorCode.not_controller
    return api_resp.AllocateProducerIdsResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        error_code=code,
        producer_id_start=ProducerId(start),
        producer_id_len=i32(length),
    )


class ControllerProducerIdManager:
    """The broker's side. ``call_controller`` sends a request to the active
    controller (following leadership changes) and ``broker_epoch`` names this
    broker's current registration."""

    def __init__(
        self, broker_id: int, broker_epoch: Callable[[], int], call_controller: CallController
    ) -> None:
        self._broker_id = broker_id
        self._broker_epoch = broker_epoch
        self._call = call_controller
        self._next = 0
        self._end = 0  # the current block is [_next, _end)
        self._refill = asyncio.Lock()

    async def next_id(self) -> int:
        """The next unused id; raises a retriable ``KafkaError`` while no
        controller grants a block."""
        async with self._refill:  # one block request at a time, never two blocks raced
            if self._next >= self._end:
                self._next, self._end = await self._fetch()
        pid = self._next
        self._next += 1
        return pid

    async def _fetch(self) -> tuple[int, int]:
        request = allocate_request(self._broker_id, self._broker_epoch())
        try:
            answer = await self._call(request, TIMEOUT_S)
        except Exception as exc:  # no controller answered: the client retries later
            log.info("AllocateProducerIds: %s", exc)
            raise KafkaError(ErrorCode.coordinator_load_in_progress, str(exc)) from None
        start, length = int(answer.producer_id_start), int(answer.producer_id_len)
        if answer.error_code is not ErrorCode.none or length <= 0:
            log.info("AllocateProducerIds refused: %s", answer.error_code.name)
            raise KafkaError(ErrorCode.coordinator_load_in_progress, answer.error_code.name)
        log.info("producer id block [%d, %d)", start, start + length)
        return start, start + length
