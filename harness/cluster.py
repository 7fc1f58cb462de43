"""A cluster: nodes on one backend, a broker on each, and a leftover registry.

`Cluster.up(spec)` builds the nodes (namespaces, containers or SSH hosts),
starts a broker on each and waits until all accept connections. Everything
that must be undone is written to `<store>/.faults/<name>.json` *before* it
is done: the backend objects at creation, every fault before it is applied.
So a run that dies leaves a record, and the next `up` of the same cluster (or
`jepka cluster heal|down`) cleans up from it alone.

`heal()` undoes every fault kind on every node, whatever the record says, and
is idempotent: flush our iptables chains, SIGCONT brokers, reset clocks,
restart dead brokers and wait until they answer (the recovery wait).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import shutil
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from control.backends import docker as docker_backend
from control.backends import local as local_backend
from control.backends.base import Node
from control.db.base import DaemonDB, process_state
from control.db.kafka import KafkaKraft
from control.db.reference import ReferenceBroker
from control.net import iptables
from control.remote import on_nodes
from nemesis.base import NemesisContext
from nemesis.package import NODE_HEALS
from nemesis.roles import KafkaRoles
from nemesis.targets import Roles

log = logging.getLogger(__name__)

BACKENDS = ("local", "docker", "ssh")
DBS = ("reference", "kafka")


class ClusterError(ValueError):
    """A cluster spec or registry that cannot be used (bad input: exit 254)."""


@dataclass(frozen=True)
class ClusterSpec:
    """Everything needed to build (and later find and clean up) a cluster."""

    name: str = "jepka"
    backend: str = "local"
    nodes: int = 3
    db: str = "reference"
    bugs: tuple[str, ...] = ()
    broker_overrides: dict[str, str] = field(default_factory=dict)
    broker_command: tuple[str, ...] = ()
    kafka_home: str | None = None
    port: int = 9092
    hosts: tuple[str, ...] = ()
    ssh_user: str = "root"
    ssh_port: int = 22
    ssh_key: str | None = None
    node_root: str | None = None
    compose_file: str | None = None
    #: reference brokers form one combined-mode cluster (False: independent
    #: single-node brokers)
    replicated: bool = True

    def validate(self) -> ClusterSpec:
        if not self.name or not all(c.isalnum() or c in "-_" for c in self.name):
            raise ClusterError(f"cluster name {self.name!r}: use letters, digits, - and _")
        if self.backend not in BACKENDS:
            raise ClusterError(f"unknown backend {self.backend!r}; known: {', '.join(BACKENDS)}")
        if self.db not in DBS:
            raise ClusterError(f"unknown db {self.db!r}; known: {', '.join(DBS)}")
        if self.db == "kafka" and not self.kafka_home:
            raise ClusterError("db kafka needs kafka_home (the Kafka installation on each node)")
        if self.backend == "ssh" and not self.hosts:
            raise ClusterError("backend ssh needs hosts")
        if self.backend == "docker" and self.nodes != 3:
            raise ClusterError("backend docker runs the 3 nodes of docker-compose.yml")
        if not 1 <= self.nodes <= 200:
            raise ClusterError(f"nodes must be 1..200, got {self.nodes}")
        return self

    @property
    def count(self) -> int:
        return len(self.hosts) if self.backend == "ssh" else self.nodes

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClusterSpec:
        fields: dict[str, Any] = {
            k: tuple(v) if isinstance(v, list) else v for k, v in data.items()
        }
        try:
            return cls(**fields).validate()
        except TypeError as e:
            raise ClusterError(f"cluster spec: {e}") from None


class Registry:
    """The leftover registry file of one cluster (JSON, rewritten atomically)."""

    def __init__(self, store: str | os.PathLike[str], name: str) -> None:
        self.path = Path(store) / ".faults" / f"{name}.json"
        self._lock = threading.Lock()

    def load(self) -> dict[str, Any] | None:
        if not self.path.exists():
            return None
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError) as e:
            raise ClusterError(f"{self.path}: unreadable leftover registry: {e}") from None
        if not isinstance(data, dict) or "spec" not in data:
            raise ClusterError(f"{self.path}: not a jepka cluster registry")
        return data

    def save(self, data: dict[str, Any]) -> None:
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
            os.replace(tmp, self.path)

    def update(self, **changes: Any) -> None:
        data = self.load() or {}
        data.update(changes)
        self.save(data)

    def add_fault(self, f: str, detail: Any) -> None:
        data = self.load() or {}
        data.setdefault("faults", []).append({"time": time.time(), "f": f, "detail": detail})
        self.save(data)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def all_registered(store: str | os.PathLike[str]) -> list[str]:
    folder = Path(store) / ".faults"
    return sorted(p.stem for p in folder.glob("*.json")) if folder.exists() else []


def default_broker_command() -> tuple[str, ...]:
    return (sys.executable, "-m", "harness", "broker")


def make_db(spec: ClusterSpec) -> DaemonDB:
    if spec.db == "kafka":
        assert spec.kafka_home is not None
        return KafkaKraft(
            spec.kafka_home, spec.name, port=spec.port, overrides=spec.broker_overrides
        )
    if spec.backend == "docker":
        return ReferenceBroker(
            spec.broker_command or ("python3", "-m", "broker"),
            port=spec.port,
            bugs=spec.bugs,
            config_path="/etc/jepka/broker.properties",
            replicated=spec.replicated,
        )
    return ReferenceBroker(
        spec.broker_command or default_broker_command(),
        port=spec.port,
        bugs=spec.bugs,
        overrides=spec.broker_overrides,
        replicated=spec.replicated,
    )


class Cluster:
    """A live (or half-dead) cluster, rebuilt from its spec and registry."""

    def __init__(self, spec: ClusterSpec, store: str | os.PathLike[str], state: dict[str, Any]):
        self.spec = spec
        self.store = Path(store)
        self.state = state
        self.registry = Registry(store, spec.name)
        self.db = make_db(spec)
        self.nodes: list[Node] = self._make_nodes()

    # --- building -------------------------------------------------------
    def _work_dir(self) -> Path:
        return (self.store / "clusters" / self.spec.name).resolve()

    def _make_nodes(self) -> list[Node]:
        kind = self.spec.backend
        if kind == "local" and "subnet" in self.state:
            names = local_backend.LocalNames(
                self.state["tag"], self.state["bridge"], self.state["subnet"]
            )
            root = self.spec.node_root or str(self._work_dir())
            return local_backend.make_nodes(names, self.spec.count, root)
        if kind == "docker" and "subnet_prefix" in self.state:
            return docker_backend.make_nodes(
                self.state["project"], self.state["subnet_prefix"], self.spec.count
            )
        if kind == "ssh":
            from control.backends.ssh import SshConfig, SshRemote

            config = SshConfig(self.spec.ssh_user, self.spec.ssh_port, self.spec.ssh_key)
            root = self.spec.node_root or "/var/lib/jepka"
            return [
                Node(
                    name=f"n{i}",
                    address=host,
                    remote=SshRemote(host, config, str(self._work_dir() / f"n{i}" / "ssh.log")),
                    root=f"{root}/n{i}",
                    node_id=i,
                )
                for i, host in enumerate(self.spec.hosts, 1)
            ]
        return []

    @property
    def client_address(self) -> str:
        if self.spec.backend == "local":
            return local_backend.LocalNames(
                self.state["tag"], self.state["bridge"], self.state["subnet"]
            ).gateway
        if self.spec.backend == "docker":
            return f"{self.state['subnet_prefix']}.1"
        remote = self.nodes[0].remote
        return remote.client_address()  # type: ignore[attr-defined, no-any-return]

    @property
    def bootstrap(self) -> str:
        """`host:port,...` for Kafka clients."""
        return ",".join(f"{n.address}:{self.db.port}" for n in self.nodes)

    @classmethod
    def up(
        cls,
        spec: ClusterSpec,
        store: str | os.PathLike[str] = "store",
        ready_timeout: float = 60.0,
        build_image: bool = False,
        owned: bool = True,
    ) -> Cluster:
        """Cleans up what dead runs left (any cluster of the same name, owned
        clusters whose owner process is gone, local bridges that lost their
        namespaces), then builds the nodes,
        starts the brokers and waits until they answer.

        An `owned` cluster belongs to this process: if the process dies
        without `down()`, the next `up` in the same store removes it. The
        command line makes unowned clusters, which live until `jepka cluster
        down`."""
        spec.validate()
        reap_orphans(store)
        if spec.backend == "local":
            for bridge in local_backend.sweep_stray_bridges():
                log.warning("removed bridge %s, left without namespaces by a dead run", bridge)
        registry = Registry(store, spec.name)
        if registry.load() is not None:
            cls.attach(spec.name, store).down()
        if spec.backend == "local" and not spec.node_root:
            # a new cluster starts empty: the data of an earlier one of the same name
            # (kept after its run for inspection) would come back as its topics
            shutil.rmtree(Path(store) / "clusters" / spec.name, ignore_errors=True)
        owner = process_identity(os.getpid()) if owned else None
        registry.save({"spec": spec.to_json(), "state": {}, "faults": [], "owner": owner})
        cluster = cls(spec, store, {})
        try:
            cluster._create(build_image)
            on_nodes(cluster.nodes, lambda n: cluster.db.setup(n, cluster.nodes))
            on_nodes(cluster.nodes, lambda n: cluster.db.wait_ready(n, ready_timeout))
        except BaseException:
            cluster.down()
            raise
        return cluster

    def _create(self, build_image: bool = False) -> None:
        spec = self.spec
        if spec.backend == "local":
            names = local_backend.LocalNames(local_backend.cluster_tag(spec.name), "", "")
            # Record the names before creating anything, so a crash half-way is cleanable.
            self.state = {"tag": names.tag, "bridge": f"jkb{names.tag}", "subnet": "pending"}
            self.registry.update(state=self.state)
            made = local_backend.create_network(spec.name, spec.count)
            self.state = {"tag": made.tag, "bridge": made.bridge, "subnet": made.subnet}
        elif spec.backend == "docker":
            if not docker_backend.engine_running():
                raise ClusterError(
                    "the Docker engine is not running (scripts/setup-system.sh starts it)"
                )
            docker_backend.ensure_image(force=build_image)
            with local_backend.net_lock():
                subnet = choose_docker_subnet(spec.name)
                prefix = subnet.rsplit(".", 1)[0]
                self.state = {
                    "project": f"jepka-{spec.name}".lower(),
                    "subnet_prefix": prefix,
                    "compose_file": spec.compose_file or str(docker_backend.COMPOSE_FILE),
                }
                self.registry.update(state=self.state)
                docker_backend.up(
                    self.state["project"], self.state["compose_file"], self._compose_env()
                )
        self.registry.update(state=self.state)
        self.nodes = self._make_nodes()

    def _compose_env(self) -> dict[str, str]:
        args = " ".join(f"--bug {b}" for b in self.spec.bugs)
        env = docker_backend.compose_env(self.state["subnet_prefix"], args)
        return {**env, "JEPKA_REPLICATED": "1" if self.spec.replicated else "0"}

    @classmethod
    def attach(cls, name: str, store: str | os.PathLike[str] = "store") -> Cluster:
        """The cluster recorded under `name`, as left by whoever made it."""
        data = Registry(store, name).load()
        if data is None:
            raise ClusterError(f"no cluster named {name!r} is registered in {store}/.faults")
        return cls(ClusterSpec.from_json(data["spec"]), store, data.get("state", {}))

    # --- faults ---------------------------------------------------------
    def nemesis_context(self, *, seed: int = 0, roles: Roles | None = None) -> NemesisContext:
        """What nemeses need; roles (controller, leaders, coordinators) are
        asked of the live cluster through a Kafka client unless given."""
        rng = random.Random(seed)
        return NemesisContext(
            nodes=self.nodes,
            db=self.db,
            client_address=self.client_address,
            roles=roles or KafkaRoles(self.nodes, self.db.port, random.Random(f"{seed}:roles")),
            record=self.registry.add_fault,
            rng=rng,
        )

    def heal(self, ready_timeout: float = 60.0) -> None:
        """Undoes every fault on every node, as each fault family says
        (``nemesis.package.NODE_HEALS``), and waits until every broker
        answers; idempotent."""

        def heal_node(node: Node) -> None:
            for heal in NODE_HEALS:
                heal(node, self.db, self.nodes)
            self.db.wait_ready(node, ready_timeout)

        if self.spec.backend == "docker":  # a stopped container comes back first
            docker_backend.up(
                self.state["project"], self.state["compose_file"], self._compose_env()
            )
            self.nodes = self._make_nodes()
        on_nodes(self.nodes, heal_node)
        self.registry.update(faults=[])

    @contextlib.contextmanager
    def healing(self) -> Iterator[Cluster]:
        """Heals on the way out, however the block ends: normally, by an
        exception, Ctrl-C, or SIGTERM/SIGHUP (turned into `SystemExit` while
        inside, then re-raised after the heal)."""
        previous = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGHUP):
                previous[sig] = signal.signal(sig, _exit_on_signal)
        try:
            yield self
        finally:
            try:
                self.heal()
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    def down(self) -> None:
        """Stops brokers and removes every trace of the cluster (rules,
        namespaces, bridges, containers, volumes, the registry entry)."""
        if self.spec.backend == "docker":
            if "project" in self.state:
                docker_backend.down(
                    self.state["project"], self.state["compose_file"], self._compose_env()
                )
        else:

            def stop_node(node: Node) -> None:
                node.run(iptables.remove_line(), check=False)
                self.db.resume(node)
                self.db.kill(node)

            try:
                on_nodes(self.nodes, stop_node)
            finally:
                if self.spec.backend == "local" and "tag" in self.state:
                    names = local_backend.LocalNames(
                        self.state["tag"], self.state["bridge"], self.state.get("subnet", "")
                    )
                    local_backend.destroy_network(names, self.spec.count)
        for node in self.nodes:
            node.remote.close()
        self.registry.remove()

    def status(self) -> list[dict[str, Any]]:
        def one(node: Node) -> dict[str, Any]:
            try:
                state = process_state(node)
                rules = iptables.rules(node)
            except Exception as e:  # a node we cannot reach is itself a status
                return {"node": node.name, "address": node.address, "error": str(e)}
            return {
                "node": node.name,
                "address": node.address,
                "broker": {"": "down", "T": "paused"}.get(state, "running"),
                "drop_rules": len(rules),
            }

        return on_nodes(self.nodes, one)

    def collect_logs(self, dest: str | os.PathLike[str]) -> list[str]:
        """Copies each node's log files to `dest/<node>/`; returns what it got."""
        got = []
        for node in self.nodes:
            for path in self.db.log_files(node):
                target = os.path.join(dest, node.name, os.path.basename(path))
                try:
                    node.remote.download(path, target)
                    got.append(target)
                except Exception:  # a log that was never written is not an error
                    continue
        return got


def process_identity(pid: int) -> dict[str, Any] | None:
    """A process as (host, pid, start time), which a reused pid cannot match."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    start = stat.rsplit(")", 1)[1].split()[19]
    return {"host": socket.gethostname(), "pid": pid, "start": start}


def reap_orphans(store: str | os.PathLike[str]) -> list[str]:
    """Removes owned clusters whose owner process on this host is gone (a
    run that was SIGKILLed or lost power); returns their names."""
    reaped = []
    for name in all_registered(store):
        try:
            owner = (Registry(store, name).load() or {}).get("owner")
        except ClusterError:
            continue
        if not owner or owner.get("host") != socket.gethostname():
            continue
        if process_identity(int(owner["pid"])) == owner:
            continue
        try:
            Cluster.attach(name, store).down()
            reaped.append(name)
        except Exception as e:  # one broken record must not block a new run
            log.warning("could not remove orphaned cluster %s: %s", name, e)
    return reaped


def _exit_on_signal(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def choose_docker_subnet(name: str) -> str:
    """A free /24 from the docker range at the top of 198.18.0.0/15."""
    subnets = list(local_backend.POOL.subnets(new_prefix=24))[-local_backend.DOCKER_SUBNETS :]
    used = local_backend.used_subnets()
    start = int(local_backend.cluster_tag(name), 16) % len(subnets)
    for k in range(len(subnets)):
        candidate = str(subnets[(start + k) % len(subnets)])
        if candidate not in used:
            return candidate
    raise ClusterError("no free /24 left for a docker cluster")
