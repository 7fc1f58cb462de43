"""The ``controller.quorum.voters`` list (``1@host:port,2@host:port,...``): every
node of a combined-mode cluster is a voter, reached on its controller listener."""

from __future__ import annotations

from dataclasses import dataclass

from broker.config import ConfigError


@dataclass(frozen=True, slots=True)
class Voter:
    node_id: int
    host: str
    port: int


def parse_voters(text: str) -> dict[int, Voter]:
    """Parses the voter list; raises ``ConfigError`` naming the bad entry."""
    voters: dict[int, Voter] = {}
    for item in (part.strip() for part in text.split(",")):
        node, at, address = item.partition("@")
        host, colon, port = address.rpartition(":")
        if not (at and colon and host and node.isdigit() and port.isdigit()):
            raise ConfigError(f"--voters: expected ID@HOST:PORT, got {item!r}")
        if int(port) > 65535 or int(port) == 0:
            raise ConfigError(f"--voters: port of {item!r} must be in 1..65535")
        if int(node) in voters:
            raise ConfigError(f"--voters: node {node} listed twice")
        voters[int(node)] = Voter(int(node), host.strip("[]"), int(port))
    return voters
