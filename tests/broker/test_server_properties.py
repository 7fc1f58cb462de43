"""The broker reads Apache Kafka's KRaft server.properties as Kafka does:
the node's layout from node.id, listeners and log.dirs, Kafka's settings
applied, the shipped template's thread and buffer settings ignored by name,
and anything it cannot honour refused with the line that asks for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config import ConfigError
from broker.server_properties import load_config

# Kafka 3.7's config/kraft/server.properties, comments dropped
SHIPPED = """\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
"""


def load(tmp_path: Path, text: str, **flags: object) -> object:
    path = tmp_path / "server.properties"
    path.write_text(text)
    return load_config(
        flags.get("node_id"),  # type: ignore[arg-type]
        flags.get("listen"),  # type: ignore[arg-type]
        flags.get("data_dir"),  # type: ignore[arg-type]
        path,
        flags.get("overrides", []),  # type: ignore[arg-type]
    )


def test_kafkas_shipped_server_properties_start_a_node(tmp_path: Path) -> None:
    config = load(tmp_path, SHIPPED)
    assert (config.node_id, config.host, config.port) == (1, "", 9092)  # type: ignore[attr-defined]
    assert config.data_dir == Path("/tmp/kraft-combined-logs")  # type: ignore[attr-defined]
    assert config["advertised.host"] == "localhost"  # type: ignore[index]
    assert config["controller.quorum.voters"] == "1@localhost:9093"  # type: ignore[index]
    assert config["retention.ms"] == 168 * 3_600_000  # type: ignore[index]
    assert config["segment.bytes"] == 1073741824  # type: ignore[index]


@pytest.mark.parametrize(
    ("lines", "millis"),
    [
        ("log.retention.hours=-1\n", -1),  # unlimited
        ("log.retention.ms=5000\nlog.retention.hours=2\n", 5000),  # the finest wins
        ("log.retention.minutes=3\n", 180_000),
    ],
)
def test_retention_as_kafka_reads_it(tmp_path: Path, lines: str, millis: int) -> None:
    text = SHIPPED.replace("log.retention.hours=168\n", "") + lines
    assert load(tmp_path, text)["retention.ms"] == millis  # type: ignore[index]


def test_the_command_line_wins_over_the_file(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        SHIPPED,
        node_id=4,
        listen="127.0.0.1:19092",
        data_dir=tmp_path / "d",
        overrides=["num.partitions=3"],
    )
    assert (config.node_id, config.port, config.data_dir) == (4, 19092, tmp_path / "d")  # type: ignore[attr-defined]
    assert config["num.partitions"] == 3  # type: ignore[index]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("process.roles=broker,controller", "process.roles=brokers"), "expected broker,"),
        (
            (
                "controller.quorum.voters=1@localhost:9093",
                "controller.quorum.bootstrap.servers=x:1",
            ),
            "controller.quorum.bootstrap.servers .* is not supported",
        ),
        (
            ("listeners=PLAINTEXT://:9092,", "listeners=PLAINTEXT://:9092,SSL://:9094,"),
            "listener SSL speaks SSL; this broker speaks PLAINTEXT only",
        ),
        (("node.id=1", "node.id=one"), "node.id must be a number"),
        (("num.io.threads=8", "num.io.thread=8"), "unknown config key 'num.io.thread'"),
        (("log.retention.hours=168", "log.retention.hours=week"), "must be a number"),
    ],
)
def test_what_it_cannot_honour_is_refused_naming_the_line(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        load(tmp_path, SHIPPED.replace(*change))


def test_a_broker_only_node_listens_on_its_broker_listener(tmp_path: Path) -> None:
    text = SHIPPED.replace("process.roles=broker,controller", "process.roles=broker")
    text = text.replace("1@localhost:9093", "2@localhost:9093")
    config = load(tmp_path, text)
    assert (config.port, config.is_broker, config.is_controller) == (9092, True, False)  # type: ignore[attr-defined]


def test_a_controller_only_node_listens_on_its_controller_listener(tmp_path: Path) -> None:
    text = SHIPPED.replace("process.roles=broker,controller", "process.roles=controller")
    text = text.replace(
        "listeners=PLAINTEXT://:9092,CONTROLLER://:9093", "listeners=CONTROLLER://:9093"
    )
    text = text.replace("inter.broker.listener.name=PLAINTEXT\n", "")
    text = text.replace("advertised.listeners=PLAINTEXT://localhost:9092\n", "")
    config = load(tmp_path, text)
    assert (config.port, config.is_broker, config.is_controller) == (9093, False, True)  # type: ignore[attr-defined]
    assert config["process.roles"] == "controller"  # type: ignore[index]


def test_without_a_file_the_layout_flags_are_required(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--node-id, --listen, --data-dir missing"):
        load_config(None, None, None, None, [])
