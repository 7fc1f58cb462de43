"""This broker's registration with the controller and its heartbeats (Kafka's
``BrokerLifecycleManager``): it registers (again after STALE_BROKER_EPOCH or an
unknown id) and heartbeats every ``broker.heartbeat.interval.ms``, reporting how far
it has applied the metadata log; the controller unfences it once that offset reaches
its registration and fences it when the heartbeats stop for the session timeout."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable

from kio.schema.errors import ErrorCode

from broker.replication import controller_apis as apis
from broker.replication.controller_channel import RETRY_S, ControllerChannel, ControllerUnavailable
from broker.server.metadata_cache import BrokerEndpoint

log = logging.getLogger(__name__)


class BrokerLifecycleManager:
    def __init__(
        self,
        endpoint: BrokerEndpoint,
        cluster_id: str,
        heartbeat_interval_ms: int,
        channel: ControllerChannel,
        metadata_offset: Callable[[], int],
    ) -> None:
        """``metadata_offset`` is the offset of the last metadata image applied here."""
        self._endpoint = endpoint
        self._cluster_id = cluster_id
        self._interval = heartbeat_interval_ms / 1000
        self._channel = channel
        self._metadata_offset = metadata_offset
        self._incarnation = uuid.uuid4()
        self._unfenced = asyncio.Event()
        self.broker_epoch = -1

    async def wait_unfenced(self) -> None:
        await self._unfenced.wait()

    async def run(self) -> None:
        """Registers and heartbeats until cancelled."""
        node_id = self._endpoint.node_id
        while True:
            try:
                if self.broker_epoch < 0:
                    request = apis.registration_request(
                        node_id,
                        self._cluster_id,
                        self._incarnation,
                        self._endpoint.host,
                        self._endpoint.port,
                    )
                    answer = await self._channel.call(request, timeout=5)
                    if answer.error_code is ErrorCode.none:
                        self.broker_epoch = answer.broker_epoch
                        log.info("registered with broker epoch %d", self.broker_epoch)
                    else:
                        log.info("registration refused: %s", answer.error_code.name)
                else:
                    offset = self._metadata_offset()
                    request = apis.heartbeat_request(node_id, self.broker_epoch, offset)
                    answer = await self._channel.call(request, timeout=5)
                    if answer.error_code in (
                        ErrorCode.stale_broker_epoch,
                        ErrorCode.broker_id_not_registered,
                    ):
                        self.broker_epoch = -1
                        continue
                    if answer.error_code is ErrorCode.none and not answer.is_fenced:
                        self._unfenced.set()
            except ControllerUnavailable as e:
                log.info("heartbeat: %s", e)
            except Exception:  # a bug here must not silently end the heartbeats
                log.exception("broker lifecycle step failed")
            await asyncio.sleep(self._interval if self.broker_epoch >= 0 else RETRY_S)
