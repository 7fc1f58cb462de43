"""A whole test against an image following apache/kafka's conventions: a
stand-in built here from the node image, its faults applied to the
containers themselves through the Docker SDK."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from control.backends import docker as docker_backend

pytestmark = [pytest.mark.integration, pytest.mark.docker, pytest.mark.slow]

STAND_IN = Path(__file__).parent / "kafka_image"


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


def test_a_test_runs_against_an_image(stand_in: str, tmp_path: Path) -> None:
    began = int(time.time()) - 1
    argv = [sys.executable, "-m", "harness", "test", "--cluster", "docker", "--image", stand_in]
    argv += ["--workload", "queue", "--nemesis", "kill,pause", "--nemesis-interval", "1.5"]
    argv += ["--time-limit", "10", "--seed", "3", "--store", str(tmp_path)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    assert "valid: True" in out

    run = tmp_path / "queue-kill+pause" / "latest"
    assert json.loads((run / "test.json").read_text())["spec"]["image"] == stand_in
    done = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    applied = {op["f"] for op in done if op.get("process") == "nemesis" and op["type"] == "info"}
    assert {"kill", "pause"} <= applied
    assert sorted(p.parent.name for p in run.glob("nodes/*/container.log")) == ["n1", "n2", "n3"]

    # the faults reached the containers themselves, and nothing is left
    project = f"jepka-jt{proc.pid}"
    client = docker_backend.client()
    events = client.events(
        since=began,
        until=int(time.time()) + 1,
        filters={"type": "container", "label": f"{docker_backend.CLUSTER_LABEL}={project}"},
        decode=True,
    )
    actions = {e["Action"] for e in events}
    assert {"kill", "pause", "unpause", "start", "destroy"} <= actions, actions
    label = {"label": f"{docker_backend.CLUSTER_LABEL}={project}"}
    assert client.containers.list(all=True, filters=label) == []
    assert client.networks.list(filters=label) == []
