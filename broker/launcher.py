"""Running a reference broker as a subprocess and waiting for its ready line
(for tests, benchmarks and local tooling); stopping it only by its own PID."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

READY = "jepka broker ready"


@dataclass
class BrokerProcess:
    data_dir: Path
    settings: list[str] = field(default_factory=list)
    node_id: int = 1
    proc: subprocess.Popen[str] | None = None
    port: int = 0
    bugs: list[str] = field(default_factory=list)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def stderr_path(self) -> Path:
        return self.data_dir.with_name(f"{self.data_dir.name}.stderr")

    def start(self, timeout: float = 30) -> BrokerProcess:
        """Starts the broker (on its previous port after a restart) and waits for 'ready'."""
        args = [sys.executable, "-m", "broker", "--node-id", str(self.node_id)]
        args += ["--listen", f"127.0.0.1:{self.port}", "--data-dir", str(self.data_dir)]
        for item in self.settings:
            args += ["--set", item]
        for bug in self.bugs:
            args += ["--bug", bug]
        # stderr goes to a file: a pipe nobody drains would stall a chatty broker.
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        with self.stderr_path.open("a") as stderr:
            self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=stderr, text=True)
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        # epoll, not select(): a test process may hold more than 1024 descriptors
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            if self._await_ready(sel, deadline):
                return self
        self.kill()
        raise RuntimeError("broker did not become ready")

    def _await_ready(self, sel: selectors.BaseSelector, deadline: float) -> bool:
        assert self.proc is not None and self.proc.stdout is not None
        while time.monotonic() < deadline:
            if sel.select(0.5):
                line = self.proc.stdout.readline()
                if line.startswith(READY):
                    self.port = int(line.rsplit(":", 1)[1])
                    return True
            if self.proc.poll() is not None:
                err = self.stderr_path.read_text()[-4000:]
                raise RuntimeError(f"broker exited with {self.proc.returncode}: {err}")
        return False

    def kill(self) -> None:
        """SIGKILL, as a crash."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> int:
        """SIGTERM, a clean shutdown; returns the exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
        return self.proc.wait(30)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None
