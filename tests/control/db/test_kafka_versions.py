"""What the Kafka adapter writes and formats per Kafka version, on stand-in
installations of 3.7 and 4.0 (no broker started): 3.x a static quorum,
4.x KIP-853's dynamic one, whose first voters the storage keeps."""

from __future__ import annotations

from pathlib import Path

import pytest

from control.backends.base import Node
from control.db.kafka import KafkaKraft, kraft_uuid
from tests.control.db.standin_kafka import make_kafka_home
from tests.harness.test_runner_cluster import LocalShell

CONTROLLERS = "198.18.7.11:9093,198.18.7.12:9093,198.18.7.13:9093"
VOTERS = "1@198.18.7.11:9093,2@198.18.7.12:9093,3@198.18.7.13:9093"


def configured(
    tmp_path: Path, version: str | None, count: int, overrides: dict[str, str] | None = None
) -> tuple[KafkaKraft, list[Node]]:
    """Nodes whose roots are directories here, each configured by the
    adapter for a stand-in of `version` (None: an installation without one)."""
    home = make_kafka_home(tmp_path, version or "0.0.0")
    if version is None:
        (home / "libs" / "kafka_2.13-0.0.0.jar").unlink()
    nodes = [
        Node(f"n{i}", f"198.18.7.{10 + i}", LocalShell(f"n{i}"), str(tmp_path / f"n{i}"), i)
        for i in range(1, count + 1)
    ]
    db = KafkaKraft(str(home), "versions", overrides=overrides)
    for node in nodes:
        db.configure(node, nodes)
    return db, nodes


def properties(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


@pytest.mark.parametrize("version", ["3.7.0", None])
def test_kafka_3_gets_its_voters_statically(tmp_path: Path, version: str | None) -> None:
    _, nodes = configured(tmp_path, version, 3)
    root = Path(nodes[1].root)
    server = properties(root / "server.properties")
    assert server["controller.quorum.voters"] == VOTERS
    assert "controller.quorum.bootstrap.servers" not in server
    assert "directory.id" not in properties(root / "data" / "meta.properties")
    assert not (root / "data" / "bootstrap.voters").exists()


def test_kafka_4_is_formatted_with_its_initial_controllers(tmp_path: Path) -> None:
    _, nodes = configured(tmp_path, "4.0.0", 3)
    for node in nodes:
        root = Path(node.root)
        server = properties(root / "server.properties")
        assert server["controller.quorum.bootstrap.servers"] == CONTROLLERS
        assert "controller.quorum.voters" not in server
        meta = properties(root / "data" / "meta.properties")
        # each node's storage has the directory id the others know it by
        assert meta["directory.id"] == kraft_uuid(f"versions:directory:{node.node_id}")
        assert (root / "data" / "bootstrap.voters").read_text().strip() == VOTERS


def test_a_single_kafka_4_node_formats_standalone(tmp_path: Path) -> None:
    db, (node,) = configured(tmp_path, "4.1.0", 1)
    assert db.format_args(node, [node], dynamic=True)[-1] == "--standalone"
    voters = (Path(node.root) / "data" / "bootstrap.voters").read_text().strip()
    assert voters == "1@198.18.7.11:9093"


def test_kafka_4_with_voters_given_formats_a_static_quorum(tmp_path: Path) -> None:
    """Kafka 4 refuses --initial-controllers beside controller.quorum.voters."""
    _, nodes = configured(tmp_path, "4.0.0", 3, {"controller.quorum.voters": VOTERS})
    server = properties(Path(nodes[0].root) / "server.properties")
    assert server["controller.quorum.voters"] == VOTERS
    assert "controller.quorum.bootstrap.servers" not in server


@pytest.mark.parametrize("name", ["jt5", "jt29", "jt77"])
def test_no_id_starts_like_an_option(name: str) -> None:
    """kafka-storage.sh would read ``-t -L1...`` as two options."""
    assert not kraft_uuid(name).startswith("-") and len(kraft_uuid(name)) == 22
