"""Config generation of the DB adapters (no broker needed)."""

from __future__ import annotations

from control.backends.base import Node
from control.db.kafka import KafkaKraft, kraft_cluster_id, server_settings
from control.db.reference import ReferenceBroker, reference_properties


class NoRemote:
    def execute(self, line: str, *, timeout: float = 60.0):  # type: ignore[no-untyped-def]
        raise AssertionError("config generation must not touch the node")

    def upload(self, local: str, remote: str) -> None: ...
    def download(self, remote: str, local: str) -> None: ...
    def close(self) -> None: ...


def nodes(n: int) -> list[Node]:
    return [
        Node(f"n{i}", f"198.18.3.{10 + i}", NoRemote(), f"/var/lib/jepka/n{i}", i)
        for i in range(1, n + 1)
    ]


def props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and line[0] != "#")


def test_kraft_combined_mode_properties() -> None:
    ns = nodes(3)
    p = server_settings(ns[1], ns, port=9092, log_dir="/d/n2")
    assert p["process.roles"] == "broker,controller"
    assert p["node.id"] == "2"
    assert p["controller.quorum.voters"] == (
        "1@198.18.3.11:9093,2@198.18.3.12:9093,3@198.18.3.13:9093"
    )
    assert p["listeners"] == "PLAINTEXT://198.18.3.12:9092,CONTROLLER://198.18.3.12:9093"
    assert p["advertised.listeners"] == "PLAINTEXT://198.18.3.12:9092"
    assert p["controller.listener.names"] == "CONTROLLER"
    assert p["log.dirs"] == "/d/n2"
    assert p["offsets.topic.replication.factor"] == "3"
    assert p["transaction.state.log.min.isr"] == "2"
    assert p["unclean.leader.election.enable"] == "false"


def test_small_clusters_cap_replication_and_overrides_win() -> None:
    one = nodes(1)
    p = server_settings(
        one[0],
        one,
        port=9200,
        log_dir="/d",
        overrides={"min.insync.replicas": "1", "num.partitions": "4"},
    )
    assert p["default.replication.factor"] == "1"
    assert p["transaction.state.log.min.isr"] == "1"
    assert p["num.partitions"] == "4"
    assert p["controller.quorum.voters"] == "1@198.18.3.11:9201"


def test_cluster_id_is_kafka_shaped_and_stable() -> None:
    cid = kraft_cluster_id("prod")
    assert len(cid) == 22 and cid == kraft_cluster_id("prod") != kraft_cluster_id("other")
    assert all(c.isalnum() or c in "-_" for c in cid)


def test_kafka_command_and_logs() -> None:
    ns = nodes(3)
    db = KafkaKraft("/opt/kafka", "c1")
    assert db.command(ns[0], ns) == [
        "/opt/kafka/bin/kafka-server-start.sh",
        "/var/lib/jepka/n1/server.properties",
    ]
    assert db.env(ns[0])["LOG_DIR"] == "/var/lib/jepka/n1/logs"
    assert "/var/lib/jepka/n1/logs/server.log" in db.log_files(ns[0])


def test_reference_broker_command_passes_bugs_through() -> None:
    ns = nodes(3)
    db = ReferenceBroker(["python3", "-m", "broker"], bugs=["lost-ack", "stale-hw"])
    argv = db.command(ns[2], ns)
    assert argv[:3] == ["python3", "-m", "broker"]
    assert argv[argv.index("--listen") + 1] == "198.18.3.13:9092"
    assert argv[argv.index("--node-id") + 1] == "3"
    assert argv[-4:] == ["--bug", "lost-ack", "--bug", "stale-hw"]
    p = props(reference_properties(ns[0], ns))
    assert p["advertised.host"] == "198.18.3.11"
    assert p["offsets.topic.replication.factor"] == "3"
    assert p["transaction.state.log.min.isr"] == "2"
