"""Starting a reference broker subprocess on a free port (port 0), for tests."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

READY = re.compile(rb"ready .*listen=([\d.]+):(\d+)")


@dataclass
class BrokerProcess:
    proc: subprocess.Popen[bytes]
    bootstrap: str

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


def start_broker(data_dir: Path, timeout_s: float = 60.0) -> BrokerProcess:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "broker",
            "--node-id",
            "1",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            str(data_dir),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + timeout_s
    assert proc.stdout is not None
    seen = b""
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen += line
        m = READY.search(line)
        if m:
            return BrokerProcess(proc, f"{m.group(1).decode()}:{m.group(2).decode()}")
    proc.kill()
    proc.wait()
    raise RuntimeError(f"broker did not become ready: {seen.decode(errors='replace')[-2000:]}")
