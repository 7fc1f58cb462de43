"""Producer-id blocks (KRaft's ``ProducerIdControlManager``): each broker's idempotent
and transactional producers draw ids from a block the controller hands out, so no two
brokers ever give out the same id, across controller failovers too."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from broker.controller.requests import ControllerResult, ProducerIdsResponse
from broker.metadata.image import MetadataImage
from broker.metadata.records import ProducerIdsRecord


class ProducerIdControlManager:
    def __init__(self, block_size: int = 1000) -> None:
        self.block_size = block_size

    def allocate(self, image: MetadataImage, broker_id: int, broker_epoch: int) -> ControllerResult:
        registration = image.brokers.get(broker_id)
        if registration is None:
            return ControllerResult([], ProducerIdsResponse(ErrorCode.broker_id_not_registered))
        if registration.broker_epoch != broker_epoch:
            return ControllerResult([], ProducerIdsResponse(ErrorCode.stale_broker_epoch))
        start = image.next_producer_id
        record = ProducerIdsRecord(broker_id, broker_epoch, start + self.block_size)
        return ControllerResult(
            [record], ProducerIdsResponse(ErrorCode.none, start, self.block_size)
        )
