"""What a request handler gets: its request's header and client, and the few broker
parts handlers use (Kafka hands ``KafkaApis`` the same parts), never the broker
itself. The broker builds one ``BrokerContext`` at start-up; the socket server
wraps it in a ``RequestContext`` per request."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from broker.config import BrokerConfig
from broker.coordinator.service import CoordinatorService
from broker.coordinator.txn.verification import TxnVerifier
from broker.protocol.codec import build, response_type
from broker.replication.fetch_session import FetchSessionCache
from broker.replication.forwarding import ForwardingManager
from broker.server.metadata_cache import MetadataCache
from broker.server.replica_manager import ReplicaManager
from broker.server.topics import TopicStore


@dataclass(frozen=True)
class BrokerContext:
    config: BrokerConfig
    replica_manager: ReplicaManager
    topics: TopicStore
    metadata_cache: MetadataCache
    coordinators: CoordinatorService
    txn_verifier: TxnVerifier
    forwarding: ForwardingManager | None
    """The controller's APIs on a cluster; None on a single node, which decides alone
    (and has no replicas fetching from it)."""
    api_versions: list[dict[str, int]]
    """What ApiVersions advertises: the ranges of the API table."""
    fetch_sessions: FetchSessionCache = field(default_factory=FetchSessionCache)
    """The followers' incremental fetch sessions (KIP-227) with this leader."""

    @property
    def node_id(self) -> int:
        return self.config.node_id


@dataclass(frozen=True)
class RequestContext:
    broker: BrokerContext
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    client_host: str

    def entity(self, name: str, data: dict[str, Any]) -> Any:
        """A nested response entity of this version, by its kio class name."""
        module = importlib.import_module(response_type(self.api_key, self.api_version).__module__)
        return build(getattr(module, name), data)
