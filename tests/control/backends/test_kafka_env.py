"""The `KAFKA_*` environment of an image following apache/kafka's
conventions: each setting's variable name, and the stand-in image's
entrypoint turning the variables back into the same server.properties."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from control.backends.base import Node
from control.db.kafka import env_name, image_env, server_settings

ENTRYPOINT = Path(__file__).parent / "kafka_image" / "entrypoint.sh"


def test_env_names_follow_the_image_rule() -> None:
    assert env_name("node.id") == "KAFKA_NODE_ID"
    assert env_name("controller.quorum.voters") == "KAFKA_CONTROLLER_QUORUM_VOTERS"
    assert env_name("listener.security.protocol.map") == "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"
    assert env_name("some_key.x") == "KAFKA_SOME__KEY_X"
    assert env_name("some-key.x") == "KAFKA_SOME___KEY_X"


def test_a_node_gets_kraft_combined_mode_variables() -> None:
    nodes = [Node(f"n{i}", f"198.18.9.{10 + i}", None, "/d", i) for i in (1, 2, 3)]  # type: ignore[arg-type]
    env = image_env(server_settings(nodes[1], nodes, port=9092, log_dir="/d"), "cid")
    assert env["CLUSTER_ID"] == "cid"
    assert env["KAFKA_NODE_ID"] == "2"
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == (
        "1@198.18.9.11:9093,2@198.18.9.12:9093,3@198.18.9.13:9093"
    )
    assert env["KAFKA_LISTENERS"] == "PLAINTEXT://198.18.9.12:9092,CONTROLLER://198.18.9.12:9093"
    assert env["KAFKA_ADVERTISED_LISTENERS"] == "PLAINTEXT://198.18.9.12:9092"
    assert env["KAFKA_CONTROLLER_LISTENER_NAMES"] == "CONTROLLER"
    assert env["KAFKA_INTER_BROKER_LISTENER_NAME"] == "PLAINTEXT"
    assert env["KAFKA_MIN_INSYNC_REPLICAS"] == "2"


def test_the_stand_in_entrypoint_renders_the_settings_back() -> None:
    """The entrypoint (shell and sed, as the image's scripts) undoes `env_name`
    for every key shape, and leaves the JVM's variables out."""
    nodes = [Node("n1", "198.18.9.11", None, "/d", 1)]  # type: ignore[arg-type]
    settings = server_settings(
        nodes[0], nodes, port=9092, log_dir="/d", overrides={"odd_key-name.x": "a=b"}
    )
    env = {**image_env(settings, "cid"), "KAFKA_HEAP_OPTS": "-Xmx1G", "KAFKA_OPTS": "-Dx=y"}
    printed = subprocess.run(
        ["sh", str(ENTRYPOINT), "--print"],
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert dict(line.split("=", 1) for line in printed.splitlines()) == settings
