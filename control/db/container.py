"""A broker that is its container's main process (an image following the
official apache/kafka image's conventions, on the docker backend).

The container's `KAFKA_*` environment configures the broker, and the
container's life is the broker's: kill, pause, resume, stop and start act on
the container through the Docker SDK, its state is the container's, and its
log is the container's output.
"""

from __future__ import annotations

import logging
import os

from control.backends.base import Node
from control.backends.docker import DockerError, container_of, engine
from control.db.base import DaemonDB
from control.db.kafka import CONTROLLER_PORT_OFFSET

log = logging.getLogger(__name__)

#: a container's status as a process state letter (`DaemonDB.state`)
STATES = {"running": "S", "restarting": "S", "paused": "T"}
LOG_NAME = "container.log"


class ContainerKafka(DaemonDB):
    """The broker of each node's container, configured when it was created."""

    def __init__(self, *, port: int = 9092) -> None:
        self.port = port
        self.controller_port = port + CONTROLLER_PORT_OFFSET  # as server_settings places it

    def configure(self, node: Node, nodes: list[Node]) -> None:
        """Nothing to write: the environment the container was made with is
        its configuration."""

    def command(self, node: Node, nodes: list[Node]) -> list[str]:
        """What the image runs (its entrypoint and command)."""
        config = container_of(node).attrs["Config"]
        return [*(config.get("Entrypoint") or []), *(config.get("Cmd") or [])]

    def data_dir(self, node: Node) -> str:
        return node.root

    def log_files(self, node: Node) -> list[str]:
        return []

    def state(self, node: Node) -> str:
        container = container_of(node)
        with engine(f"inspecting container {container.name} ({node.name})"):
            container.reload()
        return STATES.get(container.status, "")

    def setup(self, node: Node, nodes: list[Node]) -> None:
        self.start(node, nodes)

    def start(self, node: Node, nodes: list[Node]) -> None:
        if self.state(node):
            return
        container = container_of(node)
        with engine(f"starting container {container.name} ({node.name})"):
            container.start()

    def kill(self, node: Node) -> None:
        """SIGKILL to the container (unpaused first, so that it dies at once),
        then wait until it has stopped."""
        self.resume(node)
        container = container_of(node)
        with engine(f"killing container {container.name} ({node.name})"):
            if self.state(node):
                container.kill()
        self._wait_gone(node, 10.0)

    def stop(self, node: Node, timeout: float = 20.0) -> None:
        """SIGTERM to the container, SIGKILL after `timeout`."""
        self.resume(node)
        container = container_of(node)
        with engine(f"stopping container {container.name} ({node.name})"):
            container.stop(timeout=int(timeout))

    def pause(self, node: Node) -> None:
        """Freezes every process of the container (the cgroup freezer)."""
        container = container_of(node)
        with engine(f"pausing container {container.name} ({node.name})"):
            if self.state(node) == "S":
                container.pause()

    def resume(self, node: Node) -> None:
        container = container_of(node)
        with engine(f"unpausing container {container.name} ({node.name})"):
            if self.state(node) == "T":
                container.unpause()

    def wait_up(self, node: Node, nodes: list[Node], timeout: float = 60.0) -> None:
        """Up once its controller listener accepts connections: a broker opens
        its client port only after reaching its controller quorum, which a
        fault elsewhere may keep away."""
        self._wait_listening(node, self.controller_port, timeout)

    def collect_logs(self, node: Node, dest: str) -> list[str]:
        """The container's output (everything since it was created); none for
        a container that is gone, so the other nodes' logs are still kept."""
        try:
            container = container_of(node)
            with engine(f"reading the logs of container {container.name} ({node.name})"):
                text = container.logs(timestamps=True)
        except DockerError as e:
            log.warning("no logs of %s: %s", node.name, e)
            return []
        os.makedirs(dest, exist_ok=True)
        path = os.path.join(dest, LOG_NAME)
        with open(path, "wb") as f:
            f.write(text)
        return [path]
