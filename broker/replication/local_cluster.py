"""A cluster of broker processes on 127.0.0.1 (for tests, benchmarks and local
tooling): free ports picked up front, every node started before any is awaited (a
node is ready only once a quorum has formed; a voter is up as soon as its
controller listener accepts), and processes stopped only by their own PIDs.

Its ``size`` nodes (ids 1..size) are combined broker and controller nodes, or,
with ``controllers`` > 0, broker-only nodes beside that many controller-only ones
(ids after the brokers'), which alone form the quorum, as production KRaft runs."""

from __future__ import annotations

import contextlib
import random
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

from broker.launcher import BrokerProcess, await_ready

#: where listening ports are drawn from: below the kernel's ephemeral range
#: (32768 and up by default), so that no outgoing connection of another
#: process takes a port between its pick and the broker's bind
PORT_RANGE = range(20000, 32768)


def free_ports(count: int) -> list[int]:
    """Distinct ports free now, drawn at random from ``PORT_RANGE``; held
    together while picked so they are distinct."""
    rng = random.SystemRandom()
    with contextlib.ExitStack() as stack:
        ports: list[int] = []
        while len(ports) < count:
            sock = stack.enter_context(socket.socket())
            port = rng.choice(PORT_RANGE)
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            ports.append(port)
        return ports


@dataclass
class LocalCluster:
    root: Path
    size: int = 3
    settings: list[str] = field(default_factory=list)
    bugs: list[str] = field(default_factory=list)
    nodes: dict[int, BrokerProcess] = field(default_factory=dict)
    controllers: int = 0

    def __post_init__(self) -> None:
        ports = free_ports(2 * self.size + self.controllers)
        roles = [] if not self.controllers else ["process.roles=broker", *self._internal_topics()]
        for i in range(self.size):
            node_id = i + 1
            self.nodes[node_id] = BrokerProcess(
                self.root / f"n{node_id}",
                [*roles, *self.settings],
                node_id=node_id,
                port=ports[2 * i],
                bugs=self.bugs,
                controller_port=0 if self.controllers else ports[2 * i + 1],
            )
        for i, node_id in enumerate(self.controller_ids):
            port = ports[2 * self.size + i]
            self.nodes[node_id] = BrokerProcess(  # it listens on its controller port only
                self.root / f"n{node_id}",
                [*self.settings, "process.roles=controller"],
                node_id=node_id,
                port=port,
                bugs=self.bugs,
                controller_port=port,
            )
        for node in self.nodes.values():
            node.voters = self.voters

    def _internal_topics(self) -> list[str]:
        """Internal topics sized to the brokers: broker-only nodes cannot count
        them (combined nodes size them by the voters), and Kafka's defaults
        need three."""
        rf = min(3, self.size)
        return [
            f"offsets.topic.replication.factor={rf}",
            f"transaction.state.log.replication.factor={rf}",
            f"transaction.state.log.min.isr={min(2, rf)}",
        ]

    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self.size + 1))

    @property
    def controller_ids(self) -> list[int]:
        """The controller-only nodes' ids (none on combined nodes)."""
        return list(range(self.size + 1, self.size + self.controllers + 1))

    @property
    def voters(self) -> str:
        return ",".join(
            f"{n.node_id}@127.0.0.1:{n.controller_port}"
            for n in self.nodes.values()
            if n.controller_port
        )

    @property
    def bootstrap(self) -> str:
        return ",".join(self.nodes[n].address for n in self.broker_ids)

    def start(self, timeout: float = 60) -> LocalCluster:
        for node_id in self.nodes:
            self.launch(node_id)
        self.wait_ready(list(self.nodes), timeout)
        return self

    def launch(self, node_id: int) -> None:
        self.nodes[node_id].launch()

    def restart(self, node_id: int, timeout: float = 60, ready: bool = True) -> None:
        """Starts a stopped node again and waits until it serves clients or, with
        ``ready=False``, only until it is up (its controller listener accepts; a
        broker-only node, which has none, once launched): a node whose quorum is
        cut off by a fault elsewhere serves once the quorum is back (``wait_ready``
        then sees its ready line)."""
        self.launch(node_id)
        if ready:
            self.wait_ready([node_id], timeout)
            return
        node = self.nodes[node_id]
        if not node.controller_port:
            return
        deadline = time.monotonic() + timeout
        while True:
            try:
                with socket.create_connection(("127.0.0.1", node.controller_port), timeout=1):
                    return
            except OSError:
                if not node.alive():
                    err = node.stderr_path.read_text()[-4000:]
                    raise RuntimeError(f"node {node_id} exited: {err.strip()}") from None
                if time.monotonic() > deadline:
                    raise RuntimeError(f"node {node_id} not up after {timeout} s") from None
                time.sleep(0.05)

    def wait_ready(self, node_ids: list[int], timeout: float) -> None:
        await_ready([self.nodes[n] for n in node_ids], timeout)

    def kill(self, node_id: int) -> None:
        self.nodes[node_id].kill()

    def kill_all(self) -> None:
        for node in self.nodes.values():
            node.kill()
