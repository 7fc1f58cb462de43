"""Apache Kafka in KRaft combined mode (every node broker + controller).

For users with a real Kafka installation on their nodes (`kafka_home`): the
adapter writes `server.properties`, formats the storage once with a cluster
id derived from the cluster name (so re-runs agree), starts
`bin/kafka-server-start.sh` as a pidfile daemon and collects its logs.

Kafka 3.x is given its voters statically (`controller.quorum.voters`).
Kafka 4.x gets KIP-853's dynamic quorum, as its documentation sets one up:
nodes find the quorum through `controller.quorum.bootstrap.servers`, and
the first voters are written into the storage by `kafka-storage.sh format
--initial-controllers` (`--standalone` for a single node). The version is
read from the installation's core jar, `libs/kafka_<scala>-<version>.jar`.
"""

from __future__ import annotations

import base64
import itertools
import os
import posixpath
import re
import shlex
import tempfile
import uuid
from collections.abc import Mapping, Sequence

from control.backends.base import Node
from control.db.base import DaemonDB, stdout_file

CONTROLLER_PORT_OFFSET = 1
#: the first Kafka release formatted and configured for a dynamic quorum
DYNAMIC_QUORUM_SINCE = (4, 0)
#: the core jar of an installation, which names its Kafka version
CORE_JAR = re.compile(r"^kafka_[0-9.]+-([0-9]+)\.([0-9]+)\.[0-9]+[^/]*\.jar$")


def kraft_uuid(name: str) -> str:
    """Kafka's UUID format (22 base64url characters), derived
    deterministically from `name`; never starting with ``-``, which Kafka's
    tools would take for an option (its own ids skip those too)."""
    for attempt in itertools.count():
        salt = f":{attempt}" if attempt else ""
        raw = uuid.uuid5(uuid.NAMESPACE_URL, f"jepka:{name}{salt}").bytes
        text = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        if not text.startswith("-"):
            return text
    raise AssertionError("unreachable")


def kraft_cluster_id(cluster_name: str) -> str:
    """The cluster id, the same for every run on the cluster."""
    return kraft_uuid(cluster_name)


def kafka_version(jars: str) -> tuple[int, int] | None:
    """`(major, minor)` of the installation whose `libs/` lists `jars` (one
    name a line), or None when no core jar is there."""
    for name in jars.split():
        found = CORE_JAR.match(name)
        if found and not name.endswith(("-sources.jar", "-javadoc.jar", "-test.jar")):
            return int(found.group(1)), int(found.group(2))
    return None


def server_settings(
    node: Node,
    nodes: Sequence[Node],
    *,
    port: int,
    log_dir: str,
    overrides: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The settings of one node of a KRaft combined-mode cluster."""
    cport = port + CONTROLLER_PORT_OFFSET
    rf = min(3, len(nodes))
    voters = ",".join(f"{n.node_id}@{n.address}:{cport}" for n in nodes)
    return {
        "process.roles": "broker,controller",
        "node.id": str(node.node_id),
        "controller.quorum.voters": voters,
        "listeners": f"PLAINTEXT://{node.address}:{port},CONTROLLER://{node.address}:{cport}",
        "advertised.listeners": f"PLAINTEXT://{node.address}:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": log_dir,
        "num.partitions": "1",
        "default.replication.factor": str(rf),
        "min.insync.replicas": str(min(2, rf)),
        "offsets.topic.replication.factor": str(rf),
        "transaction.state.log.replication.factor": str(rf),
        "transaction.state.log.min.isr": str(min(2, rf)),
        "unclean.leader.election.enable": "false",
        "auto.create.topics.enable": "false",
        "group.initial.rebalance.delay.ms": "0",
        **(overrides or {}),
    }


def properties_text(settings: Mapping[str, str]) -> str:
    """Settings as the lines of a `server.properties`."""
    return "".join(f"{k}={v}\n" for k, v in settings.items())


def env_name(key: str) -> str:
    """The environment variable apache/kafka's image reads a setting from:
    `KAFKA_` and the key upper-cased, with `-` as `___`, `_` as `__` and `.`
    as `_` (the image undoes exactly this into its server.properties)."""
    spelled = key.replace("_", "__").replace("-", "___").replace(".", "_")
    return "KAFKA_" + spelled.upper()


def image_env(settings: Mapping[str, str], cluster_id: str) -> dict[str, str]:
    """The environment of a container of an image following apache/kafka's
    conventions: every setting as its `KAFKA_*` variable, and `CLUSTER_ID`,
    with which the image formats its storage on first start."""
    return {"CLUSTER_ID": cluster_id, **{env_name(k): v for k, v in settings.items()}}


class KafkaKraft(DaemonDB):
    """A given Kafka installation (`kafka_home` on each node) in KRaft mode."""

    def __init__(
        self,
        kafka_home: str,
        cluster_name: str,
        *,
        port: int = 9092,
        overrides: Mapping[str, str] | None = None,
        heap: str = "-Xmx1G -Xms1G",
    ) -> None:
        self.kafka_home = kafka_home
        self.cluster_name = cluster_name
        self.port = port
        self.overrides = dict(overrides or {})
        self.heap = heap

    def data_dir(self, node: Node) -> str:
        return posixpath.join(node.root, "data")

    def properties_file(self, node: Node) -> str:
        return posixpath.join(node.root, "server.properties")

    def version(self, node: Node) -> tuple[int, int] | None:
        """The installation's Kafka version on the node (None: unknown)."""
        libs = shlex.quote(posixpath.join(self.kafka_home, "libs"))
        return kafka_version(node.run(f"ls {libs} 2>/dev/null || true").out)

    def dynamic_quorum(self, node: Node) -> bool:
        """Whether the node's Kafka is configured for a dynamic quorum (4.x);
        an unknown version gets the static voters every KRaft release reads."""
        version = self.version(node)
        return version is not None and version >= DYNAMIC_QUORUM_SINCE

    def settings(self, node: Node, nodes: Sequence[Node], dynamic: bool) -> dict[str, str]:
        """The node's server settings: with a `dynamic` quorum, the
        controllers to bootstrap from instead of the voters."""
        settings = server_settings(
            node, nodes, port=self.port, log_dir=self.data_dir(node), overrides=self.overrides
        )
        if dynamic:
            del settings["controller.quorum.voters"]
            settings.setdefault(
                "controller.quorum.bootstrap.servers",
                ",".join(f"{n.address}:{self.controller_port}" for n in nodes),
            )
        return settings

    @property
    def controller_port(self) -> int:
        return self.port + CONTROLLER_PORT_OFFSET

    def format_args(self, node: Node, nodes: Sequence[Node], dynamic: bool) -> list[str]:
        """`kafka-storage.sh format`'s arguments: with a `dynamic` quorum, its
        first voters, each with the directory id its node formats with (the
        same on every node, derived from the cluster and the node)."""
        args = [
            "format",
            "-t",
            kraft_cluster_id(self.cluster_name),
            "-c",
            self.properties_file(node),
        ]
        if not dynamic:
            return args
        if len(nodes) == 1:
            return [*args, "--standalone"]
        voters = ",".join(
            f"{n.node_id}@{n.address}:{self.controller_port}:"
            f"{kraft_uuid(f'{self.cluster_name}:directory:{n.node_id}')}"
            for n in nodes
        )
        return [*args, "--initial-controllers", voters]

    def configure(self, node: Node, nodes: list[Node]) -> None:
        # voters given by hand make a static quorum, which 4.x formats without
        # --initial-controllers (it refuses both)
        dynamic = self.dynamic_quorum(node) and "controller.quorum.voters" not in self.overrides
        text = properties_text(self.settings(node, nodes, dynamic))
        with tempfile.NamedTemporaryFile("w", suffix=".properties", delete=False) as f:
            f.write(text)
        try:
            node.remote.upload(f.name, self.properties_file(node))
        finally:
            os.unlink(f.name)
        meta = shlex.quote(posixpath.join(self.data_dir(node), "meta.properties"))
        storage = posixpath.join(self.kafka_home, "bin", "kafka-storage.sh")
        fmt = [storage, *self.format_args(node, nodes, dynamic)]
        node.run(f"[ -f {meta} ] || {shlex.join(fmt)}", timeout=120)

    def command(self, node: Node, nodes: list[Node]) -> list[str]:
        return [
            posixpath.join(self.kafka_home, "bin", "kafka-server-start.sh"),
            self.properties_file(node),
        ]

    def env(self, node: Node) -> dict[str, str]:
        return {"LOG_DIR": posixpath.join(node.root, "logs"), "KAFKA_HEAP_OPTS": self.heap}

    def log_files(self, node: Node) -> list[str]:
        logs = posixpath.join(node.root, "logs")
        return [
            stdout_file(node),
            posixpath.join(logs, "server.log"),
            posixpath.join(logs, "controller.log"),
            posixpath.join(logs, "state-change.log"),
        ]
