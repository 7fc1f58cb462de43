"""What a restart during faults waits for: a reference cluster node is up once its
controller listener accepts (it opens its client port only after reaching its
quorum, which another fault may keep away); a single broker once its client port
accepts."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from control.backends.base import Node
from control.db.base import BrokerNotReady, pidfile
from control.db.reference import ReferenceBroker
from control.remote import Result
from tests.harness.test_runner_cluster import LocalShell


@pytest.fixture
def controller_listener() -> Iterator[int]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


def this_process() -> str:
    """A pidfile's line naming this process: a live one, with its start time."""
    start = Path("/proc/self/stat").read_text().rsplit(") ", 1)[1].split()[19]
    return f"{os.getpid()} {start}\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_cluster_node_is_up_on_its_controller_listener_before_it_serves(
    tmp_path: Path, controller_listener: int
) -> None:
    nodes = [
        Node(f"n{i}", "127.0.0.1", LocalShell(f"jk-w-n{i}"), str(tmp_path / f"n{i}"), i)
        for i in (1, 2)
    ]
    for node in nodes:
        Path(node.root).mkdir()
        Path(pidfile(node)).write_text(this_process())
    db = ReferenceBroker(["jepka", "broker"], port=free_port(), controller_port=controller_listener)
    db.wait_up(nodes[0], nodes, timeout=10)  # the client port is still closed
    with pytest.raises(BrokerNotReady, match="not accepting connections"):
        db.wait_ready(nodes[0], timeout=0.5)
    with pytest.raises(BrokerNotReady, match="not accepting connections"):
        db.wait_up(nodes[0], nodes[:1], timeout=0.5)  # a single broker: its client port


class CutOffShell(LocalShell):
    """A node the harness cannot reach on ``cut_off`` (nothing listens there),
    whose own shell sees its controller listener accept on that port."""

    def __init__(self, name: str, cut_off: int, listener: int) -> None:
        super().__init__(name)
        self.cut_off, self.listener = cut_off, listener

    def execute(self, line: str, *, timeout: float = 60.0) -> Result:
        return super().execute(line.replace(str(self.cut_off), str(self.listener)), timeout=timeout)


def test_a_node_cut_off_from_the_harness_is_up_once_its_listener_accepts_there(
    tmp_path: Path, controller_listener: int
) -> None:
    cut_off = free_port()
    nodes = [
        Node(f"n{i}", "127.0.0.1", CutOffShell(f"jk-w-n{i}", cut_off, controller_listener),
             str(tmp_path / f"n{i}"), i)
        for i in (1, 2)
    ]  # fmt: skip
    for node in nodes:
        Path(node.root).mkdir()
        Path(pidfile(node)).write_text(this_process())
    db = ReferenceBroker(["jepka", "broker"], port=free_port(), controller_port=cut_off)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", cut_off), 1)  # the harness is cut off
    db.wait_up(nodes[0], nodes, timeout=10)  # the node's own shell reaches its listener
