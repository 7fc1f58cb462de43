"""The reference broker (`jepka broker`) as a DB on any backend.

The broker reads a Java-style properties file; the adapter writes one per
node with the cluster-wide durability settings (internal topics at RF 3 and
min ISR 2 where there are enough nodes) and passes historical bugs through
as `--bug` flags. Several nodes form one KRaft combined-mode cluster: every
broker gets the same `--voters` list naming each node's controller listener
(its address, `controller_port`). A single node runs without `--voters`, as
the stand-alone broker it always was. Given `controller_ids`, those nodes run
controller-only (`process.roles=controller`) and alone are the voters; the
others run broker-only, as production KRaft separates them.

Producer ids need nothing from the adapter: cluster nodes draw them in blocks
from the active controller, which records each block in the metadata log.
"""

from __future__ import annotations

import os
import posixpath
import shlex
import tempfile
from collections.abc import Mapping, Sequence

from control.backends.base import Node
from control.db.base import BrokerNotReady, DaemonDB, process_state, stdout_file

#: a killed broker's partitions move 1.5 s after its connections close instead
#: of a whole broker session (9 s): more failovers a minute, the faster
#: failover the report names (the broker's own default is Kafka's: off)
DISCONNECT_GRACE_MS = "1500"


def cluster_settings(node_count: int, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The settings every reference broker of a cluster of ``node_count`` gets."""
    rf = min(3, node_count)
    return {
        "default.replication.factor": str(rf),
        "min.insync.replicas": str(min(2, rf)),
        "offsets.topic.replication.factor": str(rf),
        "transaction.state.log.replication.factor": str(rf),
        "transaction.state.log.min.isr": str(min(2, rf)),
        "group.initial.rebalance.delay.ms": "0",
        "broker.session.disconnect.grace.ms": DISCONNECT_GRACE_MS,
        **(overrides or {}),
    }


def reference_properties(
    node: Node,
    nodes: Sequence[Node],
    overrides: Mapping[str, str] | None = None,
    controller_ids: frozenset[int] = frozenset(),
) -> str:
    """The properties file of one reference broker; with `controller_ids`,
    the node's role and settings for the brokers among `nodes`."""
    brokers = len(nodes) - len(controller_ids)
    props = {"advertised.host": node.address, **cluster_settings(brokers, overrides)}
    if controller_ids:
        roles = "controller" if node.node_id in controller_ids else "broker"
        props["process.roles"] = roles
    return "".join(f"{k}={v}\n" for k, v in props.items())


def accepts_on_node(node: Node, port: int) -> bool:
    """Whether the node's own shell can connect to its port."""
    probe = f"import socket; socket.create_connection(({node.address!r}, {port}), 1).close()"
    return node.run(f"python3 -c {shlex.quote(probe)}", timeout=5, check=False).exit == 0


class ReferenceBroker(DaemonDB):
    """`<executable> --node-id N --listen ADDR:PORT --data-dir DIR --config FILE`,
    where the executable is `jepka broker` or `python3 -m broker`.

    `config_path` names a properties file already on the node (the docker
    image's); otherwise one is generated per node."""

    def __init__(
        self,
        executable: Sequence[str],
        *,
        port: int = 9092,
        bugs: Sequence[str] = (),
        overrides: Mapping[str, str] | None = None,
        extra_args: Sequence[str] = (),
        config_path: str | None = None,
        controller_port: int = 9093,
        replicated: bool = True,
        controller_ids: frozenset[int] = frozenset(),
    ) -> None:
        self.executable = list(executable)
        self.port = port
        self.bugs = list(bugs)
        self.overrides = dict(overrides or {})
        self.extra_args = list(extra_args)
        self.config_path = config_path
        self.controller_port = controller_port
        self.replicated = replicated
        self.controller_ids = controller_ids

    def data_dir(self, node: Node) -> str:
        return posixpath.join(node.root, "data")

    def config_file(self, node: Node) -> str:
        return self.config_path or posixpath.join(node.root, "broker.properties")

    def voters(self, nodes: Sequence[Node]) -> str:
        """The `--voters` value of a cluster of `nodes` ('' for one node, or
        for independent brokers when not `replicated`)."""
        if len(nodes) < 2 or not self.replicated:
            return ""
        return ",".join(
            f"{n.node_id}@{n.address}:{self.controller_port}" for n in nodes if self.is_voter(n)
        )

    def is_voter(self, node: Node) -> bool:
        """Every node on combined nodes, else the controller-only ones."""
        return not self.controller_ids or node.node_id in self.controller_ids

    def configure(self, node: Node, nodes: list[Node]) -> None:
        if self.config_path:  # provided by the node (the compose file mounts it)
            return
        text = reference_properties(node, nodes, self.overrides, self.controller_ids)
        with tempfile.NamedTemporaryFile("w", suffix=".properties", delete=False) as f:
            f.write(text)
        try:
            node.remote.upload(f.name, self.config_file(node))
        finally:
            os.unlink(f.name)

    def command(self, node: Node, nodes: list[Node]) -> list[str]:
        argv = [
            *self.executable,
            "--node-id",
            str(node.node_id),
            "--listen",
            f"{node.address}:{self.listen_port(node)}",
            "--data-dir",
            self.data_dir(node),
            "--config",
            self.config_file(node),
        ]
        if voters := self.voters(nodes):
            argv += ["--voters", voters]
        for bug in self.bugs:
            argv += ["--bug", bug]
        return argv + self.extra_args

    def listen_port(self, node: Node) -> int:
        """A controller-only node listens on its controller listener alone."""
        return self.controller_port if node.node_id in self.controller_ids else self.port

    def wait_ready(self, node: Node, timeout: float = 60.0) -> None:
        self._wait_listening(node, self.listen_port(node), timeout)

    def wait_up(self, node: Node, nodes: list[Node], timeout: float = 60.0) -> None:
        """A cluster node is up once its controller listener accepts connections: it
        opens its client port only after reaching its controller quorum (as a Kafka
        broker), which a partition or pause elsewhere may keep away. Asked on the
        node itself, since a partition may also cut the harness off from a node
        that is up. A broker-only node has no controller listener: it is up once
        its process runs."""
        if not self.voters(nodes):
            self.wait_ready(node, timeout)
        elif self.is_voter(node):
            self._wait_listening(node, self.controller_port, timeout, accepts_on_node)
        elif not process_state(node):
            raise BrokerNotReady(f"{node.name}: broker exited; see {stdout_file(node)}")

    def log_files(self, node: Node) -> list[str]:
        return [stdout_file(node), posixpath.join(self.data_dir(node), "broker.log")]
