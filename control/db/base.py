"""What every DB adapter shares: a broker is a daemon with a pidfile.

Each node keeps, under its `root`: `broker.pid` (the pid and its start
time), `broker.stdout`, `faketime` (the clock offset libfaketime re-reads)
and the broker's data directory. With the pid known, kill (SIGKILL), pause
(SIGSTOP), resume (SIGCONT) and stop (SIGTERM) are the same shell lines on
every backend (Jepsen's `db/Kill` and `db/Pause` over
`start-daemon!`/`stop-daemon!`).
"""

from __future__ import annotations

import os
import posixpath
import socket
import time
from abc import ABC, abstractmethod
from collections.abc import Callable

from control.backends.base import Node
from control.remote import daemon_line, live_pid_line, signal_line


class BrokerNotReady(RuntimeError):
    """A broker did not accept connections in time; names the node."""


def pidfile(node: Node) -> str:
    return posixpath.join(node.root, "broker.pid")


def faketime_file(node: Node) -> str:
    return posixpath.join(node.root, "faketime")


def stdout_file(node: Node) -> str:
    return posixpath.join(node.root, "broker.stdout")


# states of a live, unpaused process: sleeping, runnable, or in an
# uninterruptible wait (disk I/O such as an fsync at startup)
RUNNING = ("S", "R", "D")


def process_state(node: Node) -> str:
    """The broker's process state letter (`S`, `R`, `T` stopped, ...) or ''
    when no broker process exists (zombies count as gone)."""
    line = f'{live_pid_line(pidfile(node))}; [ -n "$jk_pid" ] && ps -o stat= -p "$jk_pid" || true'
    out = node.run(line).out.strip()
    return "" if out.startswith("Z") else out[:1]


Probe = Callable[[Node, int], bool]
"""``(node, port)``: whether the node accepts connections on the port."""


def _accepts_here(node: Node, port: int) -> bool:
    """Whether the harness can connect to the node's port."""
    try:
        with socket.create_connection((node.address, port), timeout=1.0):
            return True
    except OSError:
        return False


class DaemonDB(ABC):
    """A broker run as a pidfile daemon; subclasses say how to configure and
    launch it."""

    port: int = 9092

    @abstractmethod
    def configure(self, node: Node, nodes: list[Node]) -> None:
        """Writes whatever the broker needs on the node before it starts."""

    @abstractmethod
    def command(self, node: Node, nodes: list[Node]) -> list[str]:
        """The broker's argument list on this node."""

    def env(self, node: Node) -> dict[str, str]:
        return {}

    @abstractmethod
    def data_dir(self, node: Node) -> str:
        """Where the broker keeps its data (what `lose-unfsynced` truncates)."""

    @abstractmethod
    def log_files(self, node: Node) -> list[str]:
        """Files worth fetching into the run's store after a test."""

    def collect_logs(self, node: Node, dest: str) -> list[str]:
        """Copies the node's `log_files` into the directory `dest`; returns
        what it got (a log that was never written is not an error)."""
        got = []
        for path in self.log_files(node):
            target = os.path.join(dest, posixpath.basename(path))
            try:
                node.remote.download(path, target)
            except Exception:
                continue
            got.append(target)
        return got

    def setup(self, node: Node, nodes: list[Node]) -> None:
        """Configures and starts the broker on a node; idempotent."""
        node.run(f"mkdir -p {node.root} {self.data_dir(node)}")
        self.configure(node, nodes)
        self.start(node, nodes)

    def start(self, node: Node, nodes: list[Node]) -> None:
        """Starts the broker unless it already runs."""
        if self.state(node):
            return
        node.run(
            daemon_line(
                self.command(node, nodes),
                cwd=node.root,
                pidfile=pidfile(node),
                logfile=stdout_file(node),
                env=self.env(node),
                faketime_file=faketime_file(node),
            )
        )

    def kill(self, node: Node) -> None:
        """SIGKILL, then wait until the process is gone."""
        node.run(signal_line(pidfile(node), "CONT") + "; " + signal_line(pidfile(node), "KILL"))
        self._wait_gone(node, 10.0)

    def stop(self, node: Node, timeout: float = 20.0) -> None:
        """SIGTERM (a clean shutdown), escalating to SIGKILL after `timeout`."""
        node.run(signal_line(pidfile(node), "CONT") + "; " + signal_line(pidfile(node), "TERM"))
        if not self._wait_gone(node, timeout, raise_on_timeout=False):
            self.kill(node)

    def pause(self, node: Node) -> None:
        node.run(signal_line(pidfile(node), "STOP"))

    def resume(self, node: Node) -> None:
        node.run(signal_line(pidfile(node), "CONT"))

    def state(self, node: Node) -> str:
        """The broker's process state letter, '' when it is not running (see
        `process_state`)."""
        return process_state(node)

    def running(self, node: Node) -> bool:
        return self.state(node) != ""

    def _wait_gone(self, node: Node, timeout: float, raise_on_timeout: bool = True) -> bool:
        deadline = time.monotonic() + timeout
        while self.state(node):
            if time.monotonic() > deadline:
                if raise_on_timeout:
                    raise RuntimeError(
                        f"{node.name}: broker still running {timeout}s after a signal"
                    )
                return False
            time.sleep(0.05)
        return True

    def wait_ready(self, node: Node, timeout: float = 60.0) -> None:
        """Waits until the broker accepts TCP connections from the harness."""
        self._wait_listening(node, self.port, timeout)

    def wait_up(self, node: Node, nodes: list[Node], timeout: float = 60.0) -> None:
        """Waits until a (re)started broker is up, which a fault may keep short of
        serving clients (a cluster node cut off from its quorum): what a restart
        during faults waits for. By default, the same as `wait_ready`."""
        self.wait_ready(node, timeout)

    def _wait_listening(
        self, node: Node, port: int, timeout: float, accepts: Probe | None = None
    ) -> None:
        """Waits until ``node`` accepts connections on ``port``: from the harness,
        or as ``accepts(node, port)`` says (asked on the node, say)."""
        accepts = accepts or _accepts_here
        deadline = time.monotonic() + timeout
        while not accepts(node, port):
            if time.monotonic() > deadline:
                raise BrokerNotReady(
                    f"{node.name}: broker at {node.address}:{port} not accepting "
                    f"connections after {timeout}s; see {stdout_file(node)}"
                )
            if not self.state(node):
                raise BrokerNotReady(
                    f"{node.name}: broker exited before becoming ready; see {stdout_file(node)}"
                )
            time.sleep(0.1)
