"""The `docker` backend: each node a container, driven through the Docker SDK.

Two kinds of cluster:

* jepka's own node image (`docker-compose.yml`): containers run the reference
  broker as a pidfile daemon under an init (see `docker/node.sh`), so kill,
  pause and restart work inside a live container exactly as on the other
  backends; iptables faults need only NET_ADMIN. Compose (v2 `docker compose`
  or v1 `docker-compose`) brings the project up and down.
* any image following the official apache/kafka image's conventions
  (`image`): the backend makes a network and one container per node, each
  configured by `KAFKA_*` variables as a KRaft combined-mode node; the broker
  is the container's main process, so process faults act on the container
  (`control.db.container`).

Every operation on a container (exec, copy in and out, start, stop, kill,
pause, logs, inspect) goes through the SDK; the engine's refusals come back as
`DockerError`s naming the operation and the container. Each cluster has its
own /24 of 198.18.0.0/15.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import posixpath
import shutil
import subprocess
import tarfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import docker
import requests
from docker.errors import (
    APIError,
    DockerException,
    NotFound,
    create_api_error_from_http_exception,
)
from docker.models.containers import Container

from control.backends import local
from control.backends.base import ClusterError, InstalledBroker, Node, Record
from control.db.kafka import image_env, kraft_cluster_id, server_settings
from control.remote import Result

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker-compose.yml"
BUILD_SCRIPT = REPO / "docker" / "build-image.sh"
IMAGE = "jepka-node:latest"
ROOT = "/data"
#: labels of the containers and network of an `image` cluster
CLUSTER_LABEL = "jepka.cluster"
NODE_LABEL = "jepka.node"
#: where an `image` node keeps its data (the apache/kafka image's data volume)
IMAGE_LOG_DIR = "/var/lib/kafka/data"


class DockerError(ClusterError):
    """The Docker engine or Compose is missing, or refused an operation: the
    cluster cannot be used (exit 254, one line naming what and where)."""


def engine_address() -> str:
    return os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")


@contextmanager
def engine(what: str) -> Iterator[None]:
    """Turns the SDK's exceptions into a `DockerError` saying what was asked
    of what, and why it failed."""
    try:
        yield
    except NotFound as e:
        raise DockerError(f"{what}: it is gone ({e.explanation or e})") from None
    except APIError as e:
        raise DockerError(f"{what}: {e.explanation or e}") from None
    except (DockerException, requests.RequestException) as e:
        raise DockerError(f"{what}: no Docker engine at {engine_address()}: {e}") from None


@functools.cache
def client() -> docker.DockerClient:
    """The engine's client (DOCKER_HOST, else the local socket), checked once."""
    with engine("connecting to the Docker engine"):
        found = docker.from_env()
        found.ping()
    return found


def engine_running() -> bool:
    try:
        client()
    except DockerError:
        return False
    return True


def _tool(argv: list[str], *, timeout: float = 300.0, env: Mapping[str, str]) -> None:
    """Runs Compose or the image build script; a failure is a `DockerError`
    with the last lines it printed."""
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, env={**os.environ, **env}
        )
    except FileNotFoundError:
        raise DockerError(
            f"`{argv[0]}` is not installed (scripts/setup-system.sh installs it)"
        ) from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise DockerError(
            f"`{' '.join(argv[:4])} ...` exited {proc.returncode}: {' | '.join(tail)}"
        )


def compose_command() -> list[str]:
    """`docker compose` when the v2 plugin is there, else `docker-compose`."""
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True)
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    raise DockerError("neither `docker compose` nor `docker-compose` is installed")


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def exec_in(container: Container, argv: list[str]) -> Result:
    """Runs `argv` in the container: its exit code and both streams.

    Not `Container.exec_run`, which loses output: it reads the exec's stream
    from the raw socket beneath http.client's buffered reader, so frames that
    arrive together with the response headers (a quick command on a loaded
    machine) stay in that buffer and the command seems to print nothing
    (docker/docker-py#3332). Started without `Upgrade`, the engine answers 200
    with the stream as a body that ends when the command's output does, and
    requests reads it whole."""
    api = container.client.api
    exec_id = api.exec_create(container.id, argv)["Id"]
    url = f"{api.base_url}/v{api.api_version}/exec/{exec_id}/start"
    # no read timeout of its own: `DockerRemote.execute` bounds the wait
    response = api.post(url, json={"Detach": False, "Tty": False}, timeout=None)
    try:
        response.raise_for_status()
    except requests.HTTPError as e:
        create_api_error_from_http_exception(e)  # raises the APIError or NotFound
    out, err = demux(response.content)
    return Result(api.exec_inspect(exec_id)["ExitCode"], _decode(out), _decode(err))


def demux(stream: bytes) -> tuple[bytes, bytes]:
    """Stdout and stderr of a multiplexed stream: frames of an 8-byte header
    (stream 1 or 2, three zero bytes, a big-endian size) and that many bytes."""
    out, err = bytearray(), bytearray()
    at = 0
    while at + 8 <= len(stream):
        kind, size = stream[at], int.from_bytes(stream[at + 4 : at + 8], "big")
        (err if kind == 2 else out).extend(stream[at + 8 : at + 8 + size])
        at += 8 + size
    return bytes(out), bytes(err)


class DockerRemote:
    """Runs shell lines in a container and copies files in and out of it."""

    def __init__(self, container: str, name: str = "") -> None:
        self.container = container
        self.name = name or container[:12]

    @functools.cached_property
    def model(self) -> Container:
        """The SDK's handle on the container (looked up on first use)."""
        with engine(f"finding container {self.name}"):
            return client().containers.get(self.container)

    def execute(self, line: str, *, timeout: float = 60.0) -> Result:
        """`sh -c line` in the container. After `timeout` the result is exit
        124 and the command is left to finish on its own, as `docker exec`
        leaves it when its client goes away. A container that is gone or not
        running gives exit 125 (as the `docker` command does) with the reason."""
        box: list[Result] = []

        def run() -> None:
            try:
                with engine(f"exec in container {self.name}"):
                    box.append(exec_in(self.model, ["sh", "-c", line]))
            except DockerError as e:
                box.append(Result(125, "", str(e)))
            except Exception as e:  # an odd engine answer: an error, not a timeout
                box.append(Result(125, "", f"exec in {self.name}: {type(e).__name__}: {e}"))

        worker = threading.Thread(target=run, name=f"exec-{self.name}", daemon=True)
        worker.start()
        worker.join(timeout)
        if box:
            return box[0]
        return Result(124, "", f"timed out after {timeout}s")

    def upload(self, local: str, remote: str) -> None:
        """Copies a file in as a one-member tar archive (`put_archive`); the
        directory it goes to must exist."""
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            tar.add(local, arcname=posixpath.basename(remote))
        with engine(f"copying {local} to {self.name}:{remote}"):
            self.model.put_archive(posixpath.dirname(remote) or "/", buf.getvalue())

    def download(self, remote: str, local: str) -> None:
        """Copies a file out (`get_archive`: a tar stream of that one file)."""
        with engine(f"copying {self.name}:{remote} to {local}"):
            stream, _ = self.model.get_archive(remote)
            data = b"".join(stream)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            member = tar.next()
            source = tar.extractfile(member) if member is not None else None
            if source is None:
                raise DockerError(f"copying {self.name}:{remote}: not a regular file")
            os.makedirs(os.path.dirname(local) or ".", exist_ok=True)
            with open(local, "wb") as f:
                shutil.copyfileobj(source, f)

    def close(self) -> None:
        pass


def container_of(node: Node) -> Container:
    """The container a node of this backend is."""
    if not isinstance(node.remote, DockerRemote):
        raise ClusterError(f"{node.name} is not a container")
    return node.remote.model


def image_exists(image: str = IMAGE) -> bool:
    try:
        with engine(f"inspecting image {image}"):
            client().images.get(image)
    except DockerError:
        return False
    return True


def ensure_image(force: bool = False) -> None:
    """Builds the node image offline when its sources changed (the build
    script compares a source hash label), or always with `force`."""
    env = {"JEPKA_FORCE_BUILD": "1"} if force else {}
    _tool(["bash", str(BUILD_SCRIPT)], timeout=900, env=env)


def compose_env(subnet_prefix: str, broker_args: str) -> dict[str, str]:
    return {
        "JEPKA_SUBNET_PREFIX": subnet_prefix,
        "JEPKA_BROKER_ARGS": broker_args,
        "JEPKA_IMAGE": IMAGE,
    }


def up(project: str, compose_file: str, env: dict[str, str], timeout: float = 180.0) -> None:
    base = [*compose_command(), "-p", project, "-f", compose_file]
    _tool([*base, "up", "-d"], env=env, timeout=timeout)


def down(project: str, compose_file: str, env: dict[str, str]) -> None:
    """Removes the project's containers, network and volumes; idempotent."""
    base = [*compose_command(), "-p", project, "-f", compose_file]
    with contextlib.suppress(DockerError):  # nothing left to remove is the goal
        _tool([*base, "down", "-v", "--remove-orphans", "-t", "2"], env=env)


def labelled(label: str, value: str, key: str) -> dict[str, Container]:
    """`{label key's value: container}` of the containers (running or not)
    labelled `label=value`."""
    with engine(f"listing the containers of {value}"):
        found = client().containers.list(all=True, filters={"label": f"{label}={value}"})
    return {c.labels.get(key, ""): c for c in found}


def containers(project: str) -> dict[str, Container]:
    """`{service: container}` of a Compose project."""
    return labelled("com.docker.compose.project", project, "com.docker.compose.service")


def make_nodes(
    project: str, found: Mapping[str, Container], subnet_prefix: str, count: int, root: str
) -> list[Node]:
    """The nodes `n1`..`n<count>` of the containers `found`. A node whose
    container is gone still gets a remote, under the name `<project>-n<i>`,
    so that every operation on it says so and the rest of the cluster can
    still be healed or removed."""

    def remote(i: int) -> DockerRemote:
        container = found.get(f"n{i}")
        if container is None:
            return DockerRemote(f"{project}-n{i}", f"{project}-n{i}")
        return DockerRemote(container.id or "", container.name or f"n{i}")

    return [
        Node(
            name=f"n{i}",
            address=f"{subnet_prefix}.{10 + i}",
            remote=remote(i),
            root=root,
            node_id=i,
        )
        for i in range(1, count + 1)
    ]


#: true once a node-image container's entry has written the pidfile of the
#: broker it starts (newer than the container's init); true at once where
#: there is no pidfile (an image whose broker is the main process)
ENTRY_STARTED = f"[ ! -e {ROOT}/broker.pid ] || [ {ROOT}/broker.pid -nt /proc/1 ]"
ENTRY_START_TIMEOUT_S = 10.0


def revive(found: Mapping[str, Container]) -> None:
    """Starts the containers that are stopped and unpauses the paused ones. A
    started container's entry starts its broker: this returns once it has, so
    that a heal does not start a second one over a stale pidfile."""
    for container in found.values():
        with engine(f"reviving container {container.name}"):
            container.reload()
            if container.status == "paused":
                container.unpause()
            elif container.status != "running":
                container.start()
                _await_entry(container)


def _await_entry(container: Container) -> None:
    deadline = time.monotonic() + ENTRY_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if exec_in(container, ["sh", "-c", ENTRY_STARTED]).exit == 0:
            return
        time.sleep(0.05)


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


def create_image_cluster(
    project: str, image: str, subnet_prefix: str, envs: list[dict[str, str]]
) -> None:
    """A bridge network on the subnet and one container of `image` per
    environment, node `i` at `.1i`, all labelled with the project, started."""
    api = client().api
    labels = {CLUSTER_LABEL: project}
    with engine(f"creating network {project}"):
        pool = docker.types.IPAMPool(subnet=f"{subnet_prefix}.0/24", gateway=f"{subnet_prefix}.1")
        client().networks.create(
            project,
            driver="bridge",
            ipam=docker.types.IPAMConfig(pool_configs=[pool]),
            labels=labels,
        )
    for i, env in enumerate(envs, 1):
        name = f"{project}-n{i}"
        with engine(f"creating container {name} of image {image}"):
            made = api.create_container(
                image,
                name=name,
                hostname=f"n{i}",
                environment=env,
                labels={**labels, NODE_LABEL: f"n{i}"},
                host_config=api.create_host_config(
                    network_mode=project, cap_add=["NET_ADMIN"], init=True
                ),
                networking_config=api.create_networking_config(
                    {project: api.create_endpoint_config(ipv4_address=f"{subnet_prefix}.{10 + i}")}
                ),
            )
            api.start(made["Id"])


def remove_image_cluster(project: str) -> None:
    """Removes an image cluster's containers (with their anonymous volumes)
    and network; idempotent."""
    for container in labelled(CLUSTER_LABEL, project, NODE_LABEL).values():
        try:
            with engine(f"removing container {container.name}"):
                container.remove(force=True, v=True)
        except DockerError:
            continue  # gone already
    with engine(f"removing network {project}"):
        for network in client().networks.list(filters={"label": f"{CLUSTER_LABEL}={project}"}):
            network.remove()


@dataclass(frozen=True)
class DockerBackend:
    """A cluster's nodes as containers: the three of the Compose project
    running the reference broker of the node image (with `bugs`), or, with
    `image`, `count` containers of that image."""

    name: str
    count: int
    compose_file: str | None = None
    bugs: tuple[str, ...] = ()
    replicated: bool = True
    #: rebuild the node image even when its sources did not change
    build_image: bool = False
    #: an image following apache/kafka's conventions, instead of the node image
    image: str | None = None
    port: int = 9092
    overrides: tuple[tuple[str, str], ...] = ()

    destroy_ends_processes: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.image is None and self.count != 3:
            raise ClusterError("backend docker runs the 3 nodes of docker-compose.yml")
        if self.image is not None and self.bugs:
            raise ClusterError("bugs switch on in the reference broker; an image runs its own")

    @property
    def installed_broker(self) -> InstalledBroker | None:
        """The node image's reference broker; none for an `image`, whose
        broker is the container itself."""
        if self.image is not None:
            return None
        return InstalledBroker(("python3", "-m", "broker"), "/etc/jepka/broker.properties")

    def create(self, record: Record) -> dict[str, Any]:
        if not engine_running():
            raise ClusterError(
                f"no Docker engine at {engine_address()} (scripts/setup-system.sh starts it)"
            )
        if self.image is None:
            ensure_image(force=self.build_image)
        elif not image_exists(self.image):
            raise ClusterError(f"image {self.image} is not on this machine: pull or build it first")
        with local.net_lock():
            subnet = choose_subnet(self.name)
            state = {
                "project": f"jepka-{self.name}".lower(),
                "subnet_prefix": subnet.rsplit(".", 1)[0],
            }
            if self.image is None:
                state["compose_file"] = self.compose_file or str(COMPOSE_FILE)
                record(state)
                up(state["project"], state["compose_file"], self._env(state))
            else:
                state["image"] = self.image
                record(state)
                create_image_cluster(
                    state["project"], self.image, state["subnet_prefix"], self._image_envs(state)
                )
        return state

    def _found(self, state: Mapping[str, Any]) -> dict[str, Container]:
        if "image" in state:
            return labelled(CLUSTER_LABEL, state["project"], NODE_LABEL)
        return containers(state["project"])

    def nodes(self, state: Mapping[str, Any]) -> list[Node]:
        if "subnet_prefix" not in state:
            return []
        root = IMAGE_LOG_DIR if "image" in state else ROOT
        found = self._found(state)
        return make_nodes(state["project"], found, state["subnet_prefix"], self.count, root)

    def client_address(self, state: Mapping[str, Any], nodes: list[Node]) -> str:
        return f"{state['subnet_prefix']}.1"

    def restore(self, state: Mapping[str, Any], nodes: list[Node]) -> list[Node]:
        """Starts the containers that are stopped, unpauses the paused ones."""
        revive(self._found(state))
        return self.nodes(state)

    def destroy(self, state: Mapping[str, Any]) -> None:
        if "image" in state:
            remove_image_cluster(state["project"])
        elif "project" in state:
            down(state["project"], state["compose_file"], self._env(state))

    def _env(self, state: Mapping[str, Any]) -> dict[str, str]:
        args = " ".join(f"--bug {b}" for b in self.bugs)
        env = compose_env(state["subnet_prefix"], args)
        return {**env, "JEPKA_REPLICATED": "1" if self.replicated else "0"}

    def _image_envs(self, state: Mapping[str, Any]) -> list[dict[str, str]]:
        """Each node's `KAFKA_*` environment: one KRaft combined-mode cluster."""
        prefix = state["subnet_prefix"]
        nodes = [
            Node(f"n{i}", f"{prefix}.{10 + i}", DockerRemote(""), IMAGE_LOG_DIR, i)
            for i in range(1, self.count + 1)
        ]
        cluster_id = kraft_cluster_id(self.name)
        return [
            image_env(
                server_settings(
                    n, nodes, port=self.port, log_dir=IMAGE_LOG_DIR, overrides=dict(self.overrides)
                ),
                cluster_id,
            )
            for n in nodes
        ]
