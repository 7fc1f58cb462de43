"""What this broker tells clients about the cluster (Kafka's ``MetadataCache``): the
brokers they may use and the controller. A single node names only itself; a node of
a cluster answers from the committed metadata image
(``broker.replication.metadata_cache.KRaftMetadataCache``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

Node = tuple[int, str, int]
"""``(node_id, host, port)``, as Metadata and FindCoordinator name a broker."""


@dataclass
class BrokerEndpoint:
    """This broker's id and advertised address. ``port`` is the bound port once the
    socket server listens, since a single node may be started on port 0."""

    node_id: int
    host: str
    port: int

    def node(self) -> Node:
        return self.node_id, self.host, self.port


class MetadataCache(Protocol):
    def alive_brokers(self) -> list[Node]:
        """The brokers a client may use."""
        ...

    def controller_id(self) -> int:
        """The broker Metadata and DescribeCluster name as controller."""
        ...


class LocalMetadataCache:
    """A single node: the only broker, and its own controller."""

    def __init__(self, endpoint: BrokerEndpoint) -> None:
        self._endpoint = endpoint

    def alive_brokers(self) -> list[Node]:
        return [self._endpoint.node()]

    def controller_id(self) -> int:
        return self._endpoint.node_id
