"""Connections from the transaction machinery to other nodes' client listeners
(markers to partition leaders, verification with coordinators), one per node,
reused, and replaced when a node's registered address changes."""

from __future__ import annotations

from broker.replication.peer_client import PeerConnection


class PeerPool:
    def __init__(self, client_id: str) -> None:
        self._client_id = client_id
        self._peers: dict[int, PeerConnection] = {}

    def get(self, node_id: int, host: str, port: int) -> PeerConnection:
        peer = self._peers.get(node_id)
        if peer is None or (peer.host, peer.port) != (host, port):
            if peer is not None:
                peer.close()
            peer = self._peers[node_id] = PeerConnection(host, port, self._client_id)
        return peer

    def close(self) -> None:
        for peer in self._peers.values():
            peer.close()
        self._peers.clear()
