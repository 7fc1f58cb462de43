"""The node and backend interfaces: a node is a name, an address and a
`Remote`; a backend makes the nodes of a cluster and removes them.

A `Remote` runs shell lines on its node and copies files in and out; nothing
else. Process control (start/kill/pause/resume of the broker), iptables and
clock faults are all built from shell lines in `control.remote`, so every
backend (namespace, container, SSH host) gets them for free and behaves the
same (Jepsen's `Remote` protocol: execute!/upload!/download!).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from control.remote import RemoteError, Result


@runtime_checkable
class Remote(Protocol):
    """One transport to one node."""

    def execute(self, line: str, *, timeout: float = 60.0) -> Result:
        """Runs a shell line on the node as root and returns what happened;
        never raises for a non-zero exit (see `Node.run`)."""
        ...

    def upload(self, local: str, remote: str) -> None:
        """Copies a local file to a path on the node."""
        ...

    def download(self, remote: str, local: str) -> None:
        """Copies a file from the node to a local path."""
        ...

    def close(self) -> None:
        """Releases the connection; safe to call twice."""
        ...


@dataclass(slots=True)
class Node:
    """A cluster member as the harness sees it.

    `address` is where clients and peers reach it; `root` is the directory on
    the node holding its broker data and the harness' own files (pidfile,
    stdout, clock file).
    """

    name: str
    address: str
    remote: Remote
    root: str
    node_id: int
    extra: dict[str, str] = field(default_factory=dict)

    def run(self, line: str, *, timeout: float = 60.0, check: bool = True) -> Result:
        """Runs a shell line; raises `RemoteError` naming the node if it fails
        and `check` is set."""
        result = self.remote.execute(line, timeout=timeout)
        if check and result.exit != 0:
            raise RemoteError(self.name, line, result)
        return result


class ClusterError(ValueError):
    """A cluster spec, registry or backend that cannot be used (bad input: exit 254)."""


@dataclass(frozen=True, slots=True)
class InstalledBroker:
    """A reference broker that the node image installs and configures itself."""

    command: tuple[str, ...]
    config_path: str


#: a backend's state as it must be recorded before the next step
Record = Callable[[dict[str, Any]], None]


class Backend(Protocol):
    """Where a cluster's nodes live: network namespaces, containers, SSH hosts.

    `create` makes them and returns the state that finds them again; it
    `record`s that state before every step that would need undoing, so
    `destroy` can clean up after a run that died half-way from the record
    alone. Everything the cluster asks of its nodes beyond that goes through
    each node's `Remote`, the same on every backend.
    """

    #: `destroy` ends every process on the nodes as well (their containers go)
    destroy_ends_processes: bool
    #: the reference broker the nodes bring along, if they do
    installed_broker: InstalledBroker | None

    def create(self, record: Record) -> dict[str, Any]:
        """Makes the nodes; returns their state (recorded by the caller too)."""
        ...

    def nodes(self, state: Mapping[str, Any]) -> list[Node]:
        """The nodes `state` describes; none for a state `create` left unfinished."""
        ...

    def client_address(self, state: Mapping[str, Any], nodes: list[Node]) -> str:
        """This machine's address as the nodes see it."""
        ...

    def restore(self, state: Mapping[str, Any], nodes: list[Node]) -> list[Node]:
        """Brings back nodes a fault took away whole (a stopped container);
        returns the nodes as they are now."""
        ...

    def destroy(self, state: Mapping[str, Any]) -> None:
        """Removes everything `create` made; idempotent, safe on a half-made cluster."""
        ...
