"""A whole test against an image following apache/kafka's conventions: a
stand-in built here from the node image, its faults applied to the
containers themselves through the Docker SDK."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from control.backends import docker as docker_backend
from tests.eventually import eventually

pytestmark = [pytest.mark.integration, pytest.mark.docker, pytest.mark.slow]

STAND_IN = Path(__file__).parent / "kafka_image"
CLUSTER = docker_backend.CLUSTER_LABEL


@pytest.fixture
def stand_in(docker_engine: None) -> Iterator[str]:
    """The stand-in image, tagged uniquely, built from the local node image
    only and removed afterwards."""
    docker_backend.ensure_image()
    tag = f"jepka-kafka-stand-in:{uuid.uuid4().hex[:8]}"
    client = docker_backend.client()
    client.images.build(path=str(STAND_IN), tag=tag, pull=False, rm=True, forcerm=True)
    try:
        yield tag
    finally:
        client.images.remove(tag, force=True)


@contextmanager
def container_events() -> Iterator[list[dict[str, Any]]]:
    """The engine's events of containers of image clusters, as they come:
    the engine answers a query of past events from its last 256 only, which
    the execs of a busy machine push out within seconds."""
    stream = docker_backend.client().events(
        filters={"type": "container", "label": docker_backend.CLUSTER_LABEL}, decode=True
    )
    seen: list[dict[str, Any]] = []

    def watch() -> None:
        with contextlib.suppress(Exception):  # the stream closed under it
            for event in stream:
                seen.append(event)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield seen
    finally:
        stream.close()
        watcher.join(10)


def test_a_test_runs_against_an_image(stand_in: str, tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "harness", "test", "--cluster", "docker", "--image", stand_in]
    argv += ["--workload", "queue", "--nemesis", "kill,pause", "--nemesis-interval", "1.5"]
    argv += ["--time-limit", "10", "--seed", "3", "--store", str(tmp_path)]
    with container_events() as events:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        out, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, out
        assert "valid: True" in out
        project = f"jepka-jt{proc.pid}"

        def actions() -> set[str]:
            ours = [e for e in events if e["Actor"]["Attributes"].get(CLUSTER) == project]
            return {e["Action"] for e in ours}

        # the faults reached the containers themselves
        expected = {"kill", "pause", "unpause", "start", "destroy"}
        eventually(lambda: expected <= actions(), 10, what=lambda: f"events {actions()}")

    run = tmp_path / "queue-kill+pause" / "latest"
    assert json.loads((run / "test.json").read_text())["spec"]["image"] == stand_in
    done = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    applied = {op["f"] for op in done if op.get("process") == "nemesis" and op["type"] == "info"}
    assert {"kill", "pause"} <= applied
    assert sorted(p.parent.name for p in run.glob("nodes/*/container.log")) == ["n1", "n2", "n3"]

    # nothing is left
    client = docker_backend.client()
    label = {"label": f"{CLUSTER}={project}"}
    assert client.containers.list(all=True, filters=label) == []
    assert client.networks.list(filters=label) == []
