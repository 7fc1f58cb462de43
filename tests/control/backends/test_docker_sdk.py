"""Containers through the Docker SDK: a container's exec and copies in and
out, and its pause, kill, restart and logs, as the docker backend drives
them."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker.errors import NotFound
from docker.models.containers import Container

from control.backends import docker as docker_backend
from control.backends.base import Node
from control.db.container import ContainerKafka
from control.remote import Result
from tests.eventually import eventually

pytestmark = [pytest.mark.integration, pytest.mark.docker, pytest.mark.slow]


@pytest.fixture
def container(docker_engine: None) -> Iterator[Container]:
    """A container of the node image that prints a line, then idles (its
    own process, not the node's entry)."""
    docker_backend.ensure_image()
    made = docker_backend.client().containers.create(
        docker_backend.IMAGE,
        ["sh", "-c", "echo main-process-says-hi; exec sleep infinity"],
        entrypoint=[],
        name=f"jepka-sdk-{uuid.uuid4().hex[:8]}",
        init=True,
        network_mode="none",
    )
    try:
        made.start()
        yield made
    finally:
        with contextlib.suppress(NotFound):  # a test may remove it itself
            made.remove(force=True, v=True)


def as_node(container: Container) -> Node:
    remote = docker_backend.DockerRemote(container.id or "", container.name or "")
    return Node("n1", "127.0.0.1", remote, "/data", 1)


def test_exec_and_copies(container: Container, tmp_path: Path) -> None:
    remote = as_node(container).remote
    assert remote.execute("echo out; echo err >&2; exit 3") == Result(3, "out\n", "err\n")
    assert remote.execute("sleep 3", timeout=0.3).exit == 124

    sent = tmp_path / "in.txt"
    sent.write_bytes(b"payload\n\x00bytes")
    remote.upload(str(sent), "/tmp/copied.txt")
    assert remote.execute("wc -c < /tmp/copied.txt").out.strip() == "14"
    remote.download("/tmp/copied.txt", str(tmp_path / "back" / "out.txt"))
    assert (tmp_path / "back" / "out.txt").read_bytes() == sent.read_bytes()
    with pytest.raises(docker_backend.DockerError, match="/tmp/nothing-here"):
        remote.download("/tmp/nothing-here", str(tmp_path / "x"))

    container.remove(force=True)
    gone = remote.execute("true")
    assert gone.exit == 125 and container.name in gone.err and "gone" in gone.err
    with pytest.raises(docker_backend.DockerError, match=f"to {container.name}:/tmp/x"):
        remote.upload(str(sent), "/tmp/x")


def test_a_node_whose_container_is_gone_says_so(docker_engine: None, tmp_path: Path) -> None:
    (node,) = docker_backend.make_nodes("jepka-nothing", {}, "198.18.0", 1, "/data")
    gone = node.remote.execute("true")
    assert gone.exit == 125 and "container jepka-nothing-n1: it is gone" in gone.err
    assert ContainerKafka().collect_logs(node, str(tmp_path)) == []  # the others' are kept


def test_pause_kill_restart_and_logs(container: Container, tmp_path: Path) -> None:
    node, db = as_node(container), ContainerKafka()
    assert db.state(node) == "S"
    db.pause(node)
    assert db.state(node) == "T"
    paused = node.remote.execute("true")
    assert paused.exit == 125 and "paused" in paused.err
    db.resume(node)
    assert node.remote.execute("true").exit == 0

    db.kill(node)
    assert db.state(node) == ""
    container.reload()
    assert container.attrs["State"]["ExitCode"] == 137  # SIGKILL
    db.start(node, [node])
    assert db.running(node)

    def said_hi_twice() -> bool:  # once per start; the engine copies output in its own time
        (log,) = db.collect_logs(node, str(tmp_path / "n1"))
        return Path(log).read_text().count("main-process-says-hi") == 2

    eventually(said_hi_twice, 10, what="the restarted container's line in its logs")

    container.remove(force=True)
    with pytest.raises(docker_backend.DockerError, match=f"container {container.name}.*gone"):
        db.kill(node)


def test_an_odd_engine_answer_is_an_error_not_a_timeout(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    def odd(*args: object) -> object:
        return {}["ExitCode"]  # an exec inspect without its exit code

    monkeypatch.setattr(docker_backend, "exec_in", odd)
    answer = as_node(container).remote.execute("true", timeout=30)
    assert answer.exit == 125 and "KeyError" in answer.err
