"""`lose-unfsynced` removes exactly the unsynced tail, then the node restarts."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from confluent_kafka.admin import NewTopic

from control.backends.base import Node
from control.db.base import DaemonDB, process_state, stdout_file
from harness.cluster import Cluster
from nemesis.base import NemesisContext
from nemesis.disk import lose_unfsynced, parse_ledger
from nemesis.package import build
from tests.eventually import eventually
from workloads.handles import Clients

pytestmark = [pytest.mark.integration, pytest.mark.netns, pytest.mark.slow]

WRITER = os.path.join(os.path.dirname(__file__), "ledger_writer.py")


class WriterDB(DaemonDB):
    """Runs the ledger writer as a node's daemon."""

    port = 9300

    def configure(self, node: Node, nodes: list[Node]) -> None:
        pass

    def command(self, node: Node, nodes: list[Node]) -> list[str]:
        return [sys.executable, WRITER, self.data_dir(node), node.address, str(self.port)]

    def data_dir(self, node: Node) -> str:
        return os.path.join(node.root, "data")

    def log_files(self, node: Node) -> list[str]:
        return [stdout_file(node)]


def test_truncates_each_file_to_its_last_synced_size(cluster: Cluster) -> None:
    node = replace(cluster.nodes[0], root=os.path.join(cluster.nodes[0].root, "writer"))
    db = WriterDB()
    db.setup(node, [node])
    try:
        db.wait_ready(node)
        data = db.data_dir(node)
        ledger_path = os.path.join(data, "fsync.ledger")
        eventually(
            lambda: len(parse_ledger(Path(ledger_path).read_text())) >= 2,
            20,
            what="two files in the fsync ledger",
        )
        time.sleep(0.3)
        db.kill(node)
        names = ("seg/a.log", "b.log", "never.log")
        before = {n: Path(os.path.join(data, n)).read_bytes() for n in names}
        ledger_text = Path(ledger_path).read_text()
        synced = parse_ledger(ledger_text)
        assert synced["seg/a.log"] > 0 and "never.log" not in synced
        cut = lose_unfsynced(node, data)
        for n in names:
            after = Path(os.path.join(data, n)).read_bytes()
            keep = synced.get(n, 0)
            assert after == before[n][:keep], n
            if len(before[n]) > keep:
                assert cut[n] == (len(before[n]), keep)
        assert cut["never.log"][1] == 0
        assert Path(ledger_path).read_text() == ledger_text
    finally:
        db.kill(node)


def test_power_loss_on_a_broker_restarts_it(
    cluster: Cluster,
    nemesis_context: Callable[..., NemesisContext],
    kafka_clients: Clients,
) -> None:
    n2 = cluster.nodes[1]
    admin = kafka_clients.admin({"bootstrap.servers": f"{n2.address}:{cluster.db.port}"})
    admin.create_topics([NewTopic("power", 1, 1)])["power"].result(timeout=20)
    pid = n2.run(f"cut -d' ' -f1 {n2.root}/broker.pid").out.strip()
    pkg = build("lose-unfsynced", seed=3)
    done = pkg.nemesis.invoke(
        nemesis_context(), {"process": "nemesis", "f": "lose-unfsynced", "value": ["n2"]}
    )
    assert done["type"] == "info" and done["value"]["nodes"] == ["n2"]
    assert process_state(n2) in ("S", "R")
    assert n2.run(f"cut -d' ' -f1 {n2.root}/broker.pid").out.strip() != pid
    for path, (size, keep) in done["value"]["truncated"]["n2"].items():
        assert 0 <= keep < size, path
    assert "power" in admin.list_topics(timeout=10).topics
