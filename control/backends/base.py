"""The node interface: a node is a name, an address and a `Remote`.

A `Remote` runs shell lines on its node and copies files in and out; nothing
else. Process control (start/kill/pause/resume of the broker), iptables and
clock faults are all built from shell lines in `control.remote`, so every
backend (namespace, container, SSH host) gets them for free and behaves the
same (Jepsen's `Remote` protocol: execute!/upload!/download!).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

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
