"""ClusterControlManager and ProducerIdControlManager on real images."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from broker.controller.cluster_control import ClusterControlManager
from broker.controller.producer_ids import ProducerIdControlManager
from broker.controller.requests import BrokerHeartbeatRequest, BrokerRegistrationRequest
from broker.metadata.image import EMPTY_IMAGE
from broker.metadata.records import FenceBrokerRecord, UnfenceBrokerRecord
from tests.broker.controller.images import cluster_image, with_records


def test_registration_epoch_is_the_record_offset_and_starts_fenced() -> None:
    manager = ClusterControlManager(session_timeout_ms=1000)
    result = manager.register(EMPTY_IMAGE, BrokerRegistrationRequest(1, "a", "h", 1), 42, 0)
    assert result.response.broker_epoch == 42  # type: ignore[attr-defined]
    image = with_records(EMPTY_IMAGE, result.records)
    assert image.brokers[1].fenced and image.brokers[1].broker_epoch == 42


def test_live_broker_cannot_be_registered_twice_by_another_incarnation() -> None:
    manager = ClusterControlManager(session_timeout_ms=1000)
    image = cluster_image([1])
    manager.reset_sessions(image, now_ms=0)
    clash = manager.register(image, BrokerRegistrationRequest(1, "other", "h", 1), 50, 500)
    assert clash.response.error_code is ErrorCode.duplicate_broker_registration  # type: ignore[attr-defined]
    later = manager.register(image, BrokerRegistrationRequest(1, "other", "h", 1), 50, 1500)
    assert later.response.error_code is ErrorCode.none  # type: ignore[attr-defined]


def test_heartbeat_unfences_only_a_caught_up_broker() -> None:
    manager = ClusterControlManager(session_timeout_ms=1000)
    image = cluster_image([1], fenced=(1,))
    assert manager.heartbeat(image, BrokerHeartbeatRequest(1, 101, 100), 0) == (
        ErrorCode.none,
        None,
    )
    code, record = manager.heartbeat(image, BrokerHeartbeatRequest(1, 101, 101), 0)
    assert code is ErrorCode.none and record == UnfenceBrokerRecord(1, 101)
    assert (
        manager.heartbeat(image, BrokerHeartbeatRequest(9, 1, 0), 0)[0]
        is ErrorCode.broker_id_not_registered
    )


def test_controlled_shutdown_and_session_expiry_fence() -> None:
    manager = ClusterControlManager(session_timeout_ms=1000)
    image = cluster_image([1, 2])
    manager.reset_sessions(image, now_ms=0)
    assert manager.heartbeat(image, BrokerHeartbeatRequest(1, 101, 0, want_fence=True), 10)[1] == (
        FenceBrokerRecord(1, 101)
    )
    manager.heartbeat(image, BrokerHeartbeatRequest(2, 102, 500), 900)
    assert manager.expired(image, now_ms=1500) == [1]
    fenced = with_records(image, [FenceBrokerRecord(1, 101)])
    assert manager.expired(fenced, now_ms=1500) == []


def test_producer_id_blocks_advance_and_check_the_broker_epoch() -> None:
    manager = ProducerIdControlManager(block_size=100)
    image = cluster_image([1, 2])
    first = manager.allocate(image, 1, 101)
    image = with_records(image, first.records)
    second = manager.allocate(image, 2, 102)
    assert (first.response.producer_id_start, second.response.producer_id_start) == (0, 100)  # type: ignore[attr-defined]
    assert manager.allocate(image, 2, 7).response.error_code is ErrorCode.stale_broker_epoch  # type: ignore[attr-defined]
    assert manager.allocate(image, 5, 1).response.error_code is ErrorCode.broker_id_not_registered  # type: ignore[attr-defined]


def test_a_closed_heartbeat_connection_cuts_the_session_to_the_grace() -> None:
    manager = ClusterControlManager(session_timeout_ms=9000)
    image = cluster_image([1, 2, 3])
    manager.reset_sessions(image, now_ms=0)
    manager.disconnected(1, now_ms=1000, grace_ms=1500)
    manager.disconnected(2, now_ms=1000, grace_ms=1500)
    manager.heartbeat(image, BrokerHeartbeatRequest(2, 102, 0), 2000)  # alive: it came back
    assert manager.expired(image, now_ms=2400) == []
    assert manager.expired(image, now_ms=2600) == [1]
    assert manager.expired(image, now_ms=9100) == [1, 3]  # 3 kept its whole session
    manager.disconnected(3, now_ms=8000, grace_ms=1500)  # never lengthens a session
    assert manager.expired(image, now_ms=9000) == [1, 3]
