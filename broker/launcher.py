"""Running reference brokers as subprocesses and waiting for their ready lines
(for tests, benchmarks and local tooling); stopping them only by their own PIDs.

One :class:`BrokerProcess` is a single-node broker or, given ``voters``, one
node of a cluster (``broker.replication.local_cluster``): combined, broker-only
or controller-only, as its ``process.roles`` setting says."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

READY = "jepka broker ready"


@dataclass
class BrokerProcess:
    data_dir: Path
    settings: list[str] = field(default_factory=list)
    node_id: int = 1
    proc: subprocess.Popen[str] | None = None
    port: int = 0  # 0: any free port, learnt from the ready line
    bugs: list[str] = field(default_factory=list)
    voters: str = ""  # a cluster node: the quorum as ID@HOST:PORT,...
    controller_port: int = 0  # a voter's; 0 on a broker-only node

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def bootstrap(self) -> str:
        return self.address

    @property
    def stderr_path(self) -> Path:
        return self.data_dir.with_name(f"{self.data_dir.name}.stderr")

    def launch(self) -> None:
        """Starts the process (on its previous port after a restart) without waiting."""
        args = [sys.executable, "-m", "broker", "--node-id", str(self.node_id)]
        args += ["--listen", self.address, "--data-dir", str(self.data_dir)]
        if self.voters:
            args += ["--voters", self.voters]
        for item in self.settings:
            args += ["--set", item]
        for bug in self.bugs:
            args += ["--bug", bug]
        # stderr goes to a file: a pipe nobody drains would stall a chatty broker.
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        with self.stderr_path.open("a") as stderr:
            self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=stderr, text=True)

    def start(self, timeout: float = 30) -> BrokerProcess:
        """Starts the broker and waits for its ready line."""
        self.launch()
        try:
            await_ready([self], timeout)
        except RuntimeError:
            self.kill()
            raise
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def pause(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL, as a crash (a paused process is resumed, so that it can exit)."""
        if self.alive():
            assert self.proc is not None
            os.kill(self.proc.pid, signal.SIGKILL)
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.wait(10)

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM, a clean shutdown (checkpoints written, logs flushed); the exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
        return self.proc.wait(timeout)


def await_ready(brokers: Iterable[BrokerProcess], timeout: float) -> None:
    """Waits for each broker's ready line and learns its port from it; raises
    if one exits or ``timeout`` passes first. A selector, not select(): a test
    process may hold descriptors above FD_SETSIZE."""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        for broker in brokers:
            assert broker.proc is not None and broker.proc.stdout is not None
            selector.register(broker.proc.stdout, selectors.EVENT_READ, broker)
        while selector.get_map():
            if time.monotonic() > deadline:
                waiting = sorted(k.data.node_id for k in selector.get_map().values())
                raise RuntimeError(f"brokers {waiting} not ready after {timeout:g} s")
            for key, _ in selector.select(0.5):
                broker = key.data
                line = key.fileobj.readline()  # type: ignore[union-attr]
                if line.startswith(READY):
                    broker.port = int(line.rsplit(":", 1)[1])
                    selector.unregister(key.fileobj)
                elif not line:
                    broker.proc.wait(10)
                    err = broker.stderr_path.read_text()[-4000:].strip()
                    raise RuntimeError(
                        f"broker {broker.node_id} exited with {broker.proc.returncode}: {err}"
                    )
