"""What a node of a cluster tells clients about it (Kafka's ``KRaftMetadataCache``),
read from the committed metadata image: the unfenced brokers, the controller to name,
each broker's address and each partition's leader."""

from __future__ import annotations

from collections.abc import Callable

from broker.metadata.loader import MetadataLoader
from broker.server.metadata_cache import Node
from broker.server.topics import TopicStore


def named_controller(active: int | None, own: int, alive: list[int]) -> int:
    """What Metadata names as controller: the active controller when it is among the
    ``alive`` (unfenced) brokers this broker lists, else this broker or another listed
    one, which forward to the quorum (KRaft's brokers name an alive broker too). A
    client told of a controller missing from the broker list waits for it forever."""
    for candidate in (active, own, *alive):
        if candidate in alive:
            return candidate
    return -1


class KRaftMetadataCache:
    def __init__(
        self,
        node_id: int,
        loader: MetadataLoader,
        topics: TopicStore,
        active_controller: Callable[[], int | None],
    ) -> None:
        """``topics`` is the table the metadata publisher keeps; ``active_controller``
        the quorum leader this node knows, if any."""
        self._node_id = node_id
        self._loader = loader
        self._topics = topics
        self._active_controller = active_controller

    def alive_brokers(self) -> list[Node]:
        """Unfenced brokers, as Kafka's Metadata lists them."""
        image = self._loader.image
        return [(b.broker_id, b.host, b.port) for b in image.brokers.values() if not b.fenced]

    def controller_id(self) -> int:
        alive = [b for b, _, _ in self.alive_brokers()]
        return named_controller(self._active_controller(), self._node_id, alive)

    def broker_address(self, broker_id: int) -> tuple[str, int] | None:
        registration = self._loader.image.brokers.get(broker_id)
        return None if registration is None else (registration.host, registration.port)

    def leader(self, topic: str, partition: int) -> Node | None:
        """The partition's leader, unless it is unknown or fenced."""
        info = self._topics.topics.get(topic)
        if info is None or partition >= len(info.partitions):
            return None
        leader = self._loader.image.brokers.get(info.partitions[partition].leader)
        if leader is None or leader.fenced:
            return None
        return leader.broker_id, leader.host, leader.port
