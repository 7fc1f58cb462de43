"""Broker membership (KRaft's ``ClusterControlManager``): registration, heartbeats and
session expiry.

A broker registers fenced and is unfenced by a heartbeat once it has caught up with
the metadata log up to its own registration. Heartbeat times are volatile: they live
only in the active controller, and a newly active controller gives every broker a
full session before fencing it. What fencing does to partitions is decided by
``ReplicationControlManager``; this module only says who is fenced.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from broker.controller.requests import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    ControllerResult,
)
from broker.metadata.image import MetadataImage
from broker.metadata.records import FenceBrokerRecord, RegisterBrokerRecord, UnfenceBrokerRecord


class ClusterControlManager:
    def __init__(self, session_timeout_ms: int) -> None:
        self.session_timeout_ms = session_timeout_ms
        self.last_heartbeat: dict[int, int] = {}

    def reset_sessions(self, image: MetadataImage, now_ms: int) -> None:
        """On becoming active: every registered broker starts a fresh session."""
        self.last_heartbeat = {broker_id: now_ms for broker_id in image.brokers}

    def register(
        self,
        image: MetadataImage,
        request: BrokerRegistrationRequest,
        next_offset: int,
        now_ms: int,
    ) -> ControllerResult:
        existing = image.brokers.get(request.broker_id)
        if (
            existing is not None
            and existing.incarnation_id != request.incarnation_id
            and not existing.fenced
            and self._alive(request.broker_id, now_ms)
        ):
            return ControllerResult(
                [], BrokerRegistrationResponse(ErrorCode.duplicate_broker_registration)
            )
        self.last_heartbeat[request.broker_id] = now_ms
        record = RegisterBrokerRecord(
            request.broker_id,
            next_offset,
            request.incarnation_id,
            request.host,
            request.port,
            request.rack,
        )
        return ControllerResult([record], BrokerRegistrationResponse(ErrorCode.none, next_offset))

    def heartbeat(
        self, image: MetadataImage, request: BrokerHeartbeatRequest, now_ms: int
    ) -> tuple[ErrorCode, FenceBrokerRecord | UnfenceBrokerRecord | None]:
        """Validate a heartbeat and say whether it fences or unfences the broker."""
        registration = image.brokers.get(request.broker_id)
        if registration is None:
            return ErrorCode.broker_id_not_registered, None
        if registration.broker_epoch != request.broker_epoch:
            return ErrorCode.stale_broker_epoch, None
        self.last_heartbeat[request.broker_id] = now_ms
        epoch = registration.broker_epoch
        if request.want_fence and not registration.fenced:
            return ErrorCode.none, FenceBrokerRecord(request.broker_id, epoch)
        caught_up = request.current_metadata_offset >= epoch
        if registration.fenced and not request.want_fence and caught_up:
            return ErrorCode.none, UnfenceBrokerRecord(request.broker_id, epoch)
        return ErrorCode.none, None

    def disconnected(self, broker_id: int, now_ms: int, grace_ms: int) -> None:
        """The connection that carried ``broker_id``'s heartbeats closed: its session
        now ends ``grace_ms`` from now, unless a heartbeat renews it before; a
        negative grace changes nothing (Kafka waits out the session)."""
        if grace_ms < 0:
            return
        last = self.last_heartbeat.get(broker_id)
        if last is not None:
            self.last_heartbeat[broker_id] = min(last, now_ms - self.session_timeout_ms + grace_ms)

    def expired(self, image: MetadataImage, now_ms: int) -> list[int]:
        """Unfenced brokers whose session has run out."""
        return [
            broker_id
            for broker_id, reg in sorted(image.brokers.items())
            if not reg.fenced and not self._alive(broker_id, now_ms)
        ]

    def _alive(self, broker_id: int, now_ms: int) -> bool:
        last = self.last_heartbeat.get(broker_id)
        return last is not None and now_ms - last < self.session_timeout_ms
