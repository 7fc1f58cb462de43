"""A combined-mode cluster of broker processes on 127.0.0.1 (for tests, benchmarks
and local tooling): free ports picked up front, every node started before any is
awaited (a node is ready only once a quorum has formed; it is up as soon as its
controller listener accepts), and processes stopped only by their own PIDs."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

READY = "jepka broker ready"


def free_ports(count: int) -> list[int]:
    """Ports the kernel hands out now; bound together so they are distinct."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


@dataclass
class ClusterNodeProcess:
    node_id: int
    port: int
    controller_port: int
    data_dir: Path
    proc: subprocess.Popen[str] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def stderr_path(self) -> Path:
        return self.data_dir.with_name(f"{self.data_dir.name}.stderr")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def pause(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGCONT)

    def terminate(self, timeout: float = 30) -> None:
        """SIGTERM: a clean shutdown (checkpoints written, logs flushed)."""
        if self.alive():
            assert self.proc is not None
            self.proc.terminate()
            self.proc.wait(timeout)

    def kill(self) -> None:
        """SIGKILL, as a crash (a paused process is resumed first, so it can exit)."""
        if self.alive():
            assert self.proc is not None
            os.kill(self.proc.pid, signal.SIGKILL)
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.wait(10)


@dataclass
class LocalCluster:
    root: Path
    size: int = 3
    settings: list[str] = field(default_factory=list)
    bugs: list[str] = field(default_factory=list)
    nodes: dict[int, ClusterNodeProcess] = field(default_factory=dict)

    def __post_init__(self) -> None:
        ports = free_ports(2 * self.size)
        for i in range(self.size):
            node_id = i + 1
            self.nodes[node_id] = ClusterNodeProcess(
                node_id, ports[2 * i], ports[2 * i + 1], self.root / f"n{node_id}"
            )

    @property
    def voters(self) -> str:
        return ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes.values())

    @property
    def bootstrap(self) -> str:
        return ",".join(n.address for n in self.nodes.values())

    def start(self, timeout: float = 60) -> LocalCluster:
        for node_id in self.nodes:
            self.launch(node_id)
        self.wait_ready(list(self.nodes), timeout)
        return self

    def launch(self, node_id: int) -> None:
        node = self.nodes[node_id]
        args = [sys.executable, "-m", "broker", "--node-id", str(node_id)]
        args += ["--listen", node.address, "--data-dir", str(node.data_dir)]
        args += ["--voters", self.voters]
        for item in self.settings:
            args += ["--set", item]
        for bug in self.bugs:
            args += ["--bug", bug]
        # stderr goes to a file: a pipe nobody drains would stall a chatty node.
        node.data_dir.parent.mkdir(parents=True, exist_ok=True)
        with node.stderr_path.open("a") as stderr:
            node.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=stderr, text=True)

    def restart(self, node_id: int, timeout: float = 60, ready: bool = True) -> None:
        """Starts a stopped node again and waits until it serves clients or, with
        ``ready=False``, only until it is up (its controller listener accepts): a node
        whose quorum is cut off by a fault elsewhere serves once the quorum is back
        (``wait_ready`` then sees its ready line)."""
        self.launch(node_id)
        if ready:
            self.wait_ready([node_id], timeout)
            return
        node = self.nodes[node_id]
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
        """Waits for each node's ready line (a selector, not select(): test processes
        may hold descriptors above FD_SETSIZE)."""
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            for node_id in node_ids:
                node = self.nodes[node_id]
                assert node.proc is not None and node.proc.stdout is not None
                selector.register(node.proc.stdout, selectors.EVENT_READ, node)
            while selector.get_map():
                if time.monotonic() > deadline:
                    waiting = sorted(k.data.node_id for k in selector.get_map().values())
                    raise RuntimeError(f"nodes {waiting} not ready")
                for key, _ in selector.select(0.5):
                    line = key.fileobj.readline()  # type: ignore[union-attr]
                    if line.startswith(READY):
                        selector.unregister(key.fileobj)
                    elif not line:
                        err = key.data.stderr_path.read_text()[-4000:]
                        raise RuntimeError(f"node {key.data.node_id} exited: {err.strip()}")

    def kill(self, node_id: int) -> None:
        self.nodes[node_id].kill()

    def kill_all(self) -> None:
        for node in self.nodes.values():
            node.kill()
