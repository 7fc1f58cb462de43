"""The `docker` backend: each node a container of `docker-compose.yml`.

Containers run the broker as a pidfile daemon under an init (see
`docker/node.sh`), so kill, pause and restart work inside a live container
exactly as on the other backends; iptables faults need only NET_ADMIN. Works
with Compose v2 (`docker compose`) or v1 (`docker-compose`), whichever is
installed. Each cluster is its own Compose project on its own /24 of
198.18.0.0/15.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from control.backends import local
from control.backends.base import ClusterError, InstalledBroker, Node, Record
from control.remote import Result

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker-compose.yml"
BUILD_SCRIPT = REPO / "docker" / "build-image.sh"
IMAGE = "jepka-node:latest"
ROOT = "/data"


class DockerError(RuntimeError):
    """The Docker engine or Compose is missing or failed."""


def _run(
    argv: list[str],
    *,
    timeout: float = 300.0,
    env: dict[str, str] | None = None,
    check: bool = True,
) -> Result:
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
        )
    except FileNotFoundError:
        raise DockerError(
            f"`{argv[0]}` is not installed (scripts/setup-system.sh installs it)"
        ) from None
    result = Result(proc.returncode, proc.stdout, proc.stderr)
    if check and proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise DockerError(
            f"`{' '.join(argv[:4])} ...` exited {proc.returncode}: {' | '.join(tail)}"
        )
    return result


def compose_command() -> list[str]:
    """`docker compose` when the v2 plugin is there, else `docker-compose`."""
    if shutil.which("docker") and _run(["docker", "compose", "version"], check=False).exit == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    raise DockerError("neither `docker compose` nor `docker-compose` is installed")


def engine_running() -> bool:
    return shutil.which("docker") is not None and _run(["docker", "info"], check=False).exit == 0


class DockerRemote:
    """Runs shell lines in a container with `docker exec`."""

    def __init__(self, container: str) -> None:
        self.container = container

    def execute(self, line: str, *, timeout: float = 60.0) -> Result:
        try:
            return _run(
                ["docker", "exec", self.container, "sh", "-c", line], timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired:
            return Result(124, "", f"timed out after {timeout}s")

    def upload(self, local: str, remote: str) -> None:
        _run(["docker", "cp", local, f"{self.container}:{remote}"])

    def download(self, remote: str, local: str) -> None:
        os.makedirs(os.path.dirname(local) or ".", exist_ok=True)
        _run(["docker", "cp", f"{self.container}:{remote}", local])

    def close(self) -> None:
        pass


def image_exists() -> bool:
    return _run(["docker", "image", "inspect", IMAGE], check=False).exit == 0


def ensure_image(force: bool = False) -> None:
    """Builds the node image offline when its sources changed (the build
    script compares a source hash label), or always with `force`."""
    env = {"JEPKA_FORCE_BUILD": "1"} if force else {}
    _run(["bash", str(BUILD_SCRIPT)], timeout=900, env=env)


def compose_env(subnet_prefix: str, broker_args: str) -> dict[str, str]:
    return {
        "JEPKA_SUBNET_PREFIX": subnet_prefix,
        "JEPKA_BROKER_ARGS": broker_args,
        "JEPKA_IMAGE": IMAGE,
    }


def up(project: str, compose_file: str, env: dict[str, str], timeout: float = 180.0) -> None:
    base = [*compose_command(), "-p", project, "-f", compose_file]
    _run([*base, "up", "-d"], env=env, timeout=timeout)


def down(project: str, compose_file: str, env: dict[str, str]) -> None:
    """Removes the project's containers, network and volumes; idempotent."""
    base = [*compose_command(), "-p", project, "-f", compose_file]
    _run([*base, "down", "-v", "--remove-orphans", "-t", "2"], env=env, check=False)


def containers(project: str) -> dict[str, str]:
    """`{service: container id}` of a project's containers (running or not)."""
    out = _run(
        [
            "docker",
            "ps",
            "-a",
            "--filter",
            f"label=com.docker.compose.project={project}",
            "--format",
            '{{.ID}} {{.Label "com.docker.compose.service"}}',
        ],
        check=False,
    ).out
    return {svc: cid for cid, _, svc in (line.partition(" ") for line in out.splitlines())}


def make_nodes(project: str, subnet_prefix: str, count: int) -> list[Node]:
    found = containers(project)
    missing = [f"n{i}" for i in range(1, count + 1) if f"n{i}" not in found]
    if missing:
        raise DockerError(f"compose project {project}: no container for {', '.join(missing)}")
    return [
        Node(
            name=f"n{i}",
            address=f"{subnet_prefix}.{10 + i}",
            remote=DockerRemote(found[f"n{i}"]),
            root=ROOT,
            node_id=i,
        )
        for i in range(1, count + 1)
    ]


def choose_subnet(name: str) -> str:
    """A free /24 from the docker range at the top of 198.18.0.0/15."""
    subnets = list(local.POOL.subnets(new_prefix=24))[-local.DOCKER_SUBNETS :]
    used = local.used_subnets()
    start = int(local.cluster_tag(name), 16) % len(subnets)
    for k in range(len(subnets)):
        candidate = str(subnets[(start + k) % len(subnets)])
        if candidate not in used:
            return candidate
    raise ClusterError("no free /24 left for a docker cluster")


@dataclass(frozen=True)
class DockerBackend:
    """A cluster's nodes as the three containers of a Compose project, each
    running the reference broker of the node image (with `bugs`)."""

    name: str
    count: int
    compose_file: str | None = None
    bugs: tuple[str, ...] = ()
    replicated: bool = True
    #: rebuild the node image even when its sources did not change
    build_image: bool = False

    destroy_ends_processes: ClassVar[bool] = True
    installed_broker: ClassVar[InstalledBroker | None] = InstalledBroker(
        ("python3", "-m", "broker"), "/etc/jepka/broker.properties"
    )

    def __post_init__(self) -> None:
        if self.count != 3:
            raise ClusterError("backend docker runs the 3 nodes of docker-compose.yml")

    def create(self, record: Record) -> dict[str, Any]:
        if not engine_running():
            raise ClusterError(
                "the Docker engine is not running (scripts/setup-system.sh starts it)"
            )
        ensure_image(force=self.build_image)
        with local.net_lock():
            subnet = choose_subnet(self.name)
            state = {
                "project": f"jepka-{self.name}".lower(),
                "subnet_prefix": subnet.rsplit(".", 1)[0],
                "compose_file": self.compose_file or str(COMPOSE_FILE),
            }
            record(state)
            up(state["project"], state["compose_file"], self._env(state))
        return state

    def nodes(self, state: Mapping[str, Any]) -> list[Node]:
        if "subnet_prefix" not in state:
            return []
        return make_nodes(state["project"], state["subnet_prefix"], self.count)

    def client_address(self, state: Mapping[str, Any], nodes: list[Node]) -> str:
        return f"{state['subnet_prefix']}.1"

    def restore(self, state: Mapping[str, Any], nodes: list[Node]) -> list[Node]:
        """`compose up`: starts the containers that are stopped, leaves the rest."""
        up(state["project"], state["compose_file"], self._env(state))
        return self.nodes(state)

    def destroy(self, state: Mapping[str, Any]) -> None:
        if "project" in state:
            down(state["project"], state["compose_file"], self._env(state))

    def _env(self, state: Mapping[str, Any]) -> dict[str, str]:
        args = " ".join(f"--bug {b}" for b in self.bugs)
        env = compose_env(state["subnet_prefix"], args)
        return {**env, "JEPKA_REPLICATED": "1" if self.replicated else "0"}
