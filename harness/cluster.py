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
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from control.backends.base import Backend, ClusterError, Node
from control.backends.docker import DockerBackend
from control.backends.local import LocalBackend
from control.db.base import DaemonDB
from control.db.container import ContainerKafka
from control.db.kafka import KafkaKraft
from control.db.reference import ReferenceBroker
from control.net import iptables
from control.remote import on_nodes
from harness.stopping import stop_signals_exit
from nemesis.base import NemesisContext
from nemesis.package import NODE_HEALS
from nemesis.roles import KafkaRoles
from nemesis.targets import Roles
from workloads.keys import KeyMap

log = logging.getLogger(__name__)

BACKENDS = ("local", "docker", "ssh")
DBS = ("reference", "kafka")


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
    #: None: from the ssh config file, else root and port 22
    ssh_user: str | None = None
    ssh_port: int | None = None
    ssh_key: str | None = None
    ssh_config: str = "~/.ssh/config"
    ssh_check_host_keys: bool = True
    node_root: str | None = None
    compose_file: str | None = None
    #: backend docker: an image following apache/kafka's conventions to run
    #: instead of the reference broker's node image
    image: str | None = None
    #: reference brokers form one combined-mode cluster (False: independent
    #: single-node brokers)
    replicated: bool = True
    #: controller-only nodes after the `nodes` broker-only ones, which then
    #: follow that separate quorum (0: every node is broker and controller)
    controllers: int = 0

    def validate(self) -> ClusterSpec:
        if not self.name or not all(c.isalnum() or c in "-_" for c in self.name):
            raise ClusterError(f"cluster name {self.name!r}: use letters, digits, - and _")
        if self.backend not in BACKENDS:
            raise ClusterError(f"unknown backend {self.backend!r}; known: {', '.join(BACKENDS)}")
        if self.db not in DBS:
            raise ClusterError(f"unknown db {self.db!r}; known: {', '.join(DBS)}")
        if self.image and self.backend != "docker":
            raise ClusterError(f"image {self.image}: images run on backend docker only")
        if self.image and self.db != "reference":
            raise ClusterError(f"image {self.image} brings its own broker: leave db unset")
        if self.db == "kafka" and not self.kafka_home:
            raise ClusterError("db kafka needs kafka_home (the Kafka installation on each node)")
        if not 1 <= self.nodes <= 200:
            raise ClusterError(f"nodes must be 1..200, got {self.nodes}")
        if not 0 <= self.controllers <= 9:
            raise ClusterError(f"controllers must be 0..9, got {self.controllers}")
        if self.controllers and (
            self.backend != "local" or self.db != "reference" or not self.replicated
        ):
            given = f"backend {self.backend} with db {self.db}"
            raise ClusterError(
                "controllers: dedicated controller nodes run only on backend local with "
                "the replicated reference broker, not "
                + (given if self.replicated else "independent brokers")
            )
        make_backend(self, Path("."))
        return self

    @property
    def broker_count(self) -> int:
        """How many broker nodes: one per host when hosts are given."""
        return len(self.hosts) or self.nodes

    @property
    def count(self) -> int:
        """How many nodes: the brokers, then any controller-only ones."""
        return self.broker_count + self.controllers

    @property
    def controller_ids(self) -> frozenset[int]:
        """The node ids of the controller-only nodes (none on combined nodes)."""
        return frozenset(range(self.broker_count + 1, self.count + 1))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClusterSpec:
        fields: dict[str, Any] = {
            k: tuple(v) if isinstance(v, list) else v for k, v in data.items()
        }
        # a registry written before host keys were checked: its hosts were let
        # in unchecked, so checking now would leave it impossible to heal
        fields.setdefault("ssh_check_host_keys", False)
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
    """``python -m broker``: the broker's own entry point, which imports the
    broker alone. ``jepka broker`` runs the same code, but its command line
    first imports every subcommand (pandas and the Docker SDK among them),
    some two seconds a start that every restart under a kill would wait."""
    return (sys.executable, "-m", "broker")


def make_backend(spec: ClusterSpec, work_dir: Path, build_image: bool = False) -> Backend:
    """The spec's backend; `work_dir` keeps the cluster's files on this machine."""
    if spec.hosts and spec.backend != "ssh":
        raise ClusterError(f"backend {spec.backend} makes its own nodes: hosts are for backend ssh")
    if spec.backend == "local":
        return LocalBackend(spec.name, spec.count, spec.node_root or str(work_dir))
    if spec.backend == "docker":
        return DockerBackend(
            spec.name,
            spec.count,
            spec.compose_file,
            spec.bugs,
            spec.replicated,
            build_image,
            spec.image,
            spec.port,
            tuple(spec.broker_overrides.items()),
        )
    from control.backends.ssh import SshBackend, SshConfig  # paramiko only when needed

    config = SshConfig(
        spec.ssh_user,
        spec.ssh_port,
        spec.ssh_key,
        check_host_keys=spec.ssh_check_host_keys,
        config_file=spec.ssh_config,
    )
    return SshBackend(spec.hosts, config, spec.node_root or "/var/lib/jepka", str(work_dir))


def make_db(spec: ClusterSpec, backend: Backend) -> DaemonDB:
    if spec.image:
        return ContainerKafka(port=spec.port)
    if spec.db == "kafka":
        assert spec.kafka_home is not None
        return KafkaKraft(
            spec.kafka_home, spec.name, port=spec.port, overrides=spec.broker_overrides
        )
    installed = backend.installed_broker
    if installed is not None:
        return ReferenceBroker(
            spec.broker_command or installed.command,
            port=spec.port,
            bugs=spec.bugs,
            config_path=installed.config_path,
            replicated=spec.replicated,
        )
    return ReferenceBroker(
        spec.broker_command or default_broker_command(),
        port=spec.port,
        bugs=spec.bugs,
        overrides=spec.broker_overrides,
        replicated=spec.replicated,
        controller_ids=spec.controller_ids,
    )


class Cluster:
    """A live (or half-dead) cluster, rebuilt from its spec and registry."""

    def __init__(
        self,
        spec: ClusterSpec,
        store: str | os.PathLike[str],
        state: dict[str, Any],
        build_image: bool = False,
    ):
        self.spec = spec
        self.store = Path(store)
        self.state = state
        self.registry = Registry(store, spec.name)
        self.backend = make_backend(spec, self._work_dir(), build_image)
        self.db = make_db(spec, self.backend)
        self.nodes: list[Node] = self.backend.nodes(state)

    def _work_dir(self) -> Path:
        return (self.store / "clusters" / self.spec.name).resolve()

    @property
    def client_address(self) -> str:
        return self.backend.client_address(self.state, self.nodes)

    @property
    def brokers(self) -> list[Node]:
        """The nodes clients reach: all but controller-only ones."""
        return [n for n in self.nodes if n.node_id not in self.spec.controller_ids]

    @property
    def bootstrap(self) -> str:
        """`host:port,...` for Kafka clients."""
        return ",".join(f"{n.address}:{self.db.port}" for n in self.brokers)

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
        registry = Registry(store, spec.name)
        if registry.load() is not None:
            cls.attach(spec.name, store).down()
        if not spec.node_root:
            # a new cluster starts empty: the data of an earlier one of the same name
            # (kept after its run for inspection) would come back as its topics
            shutil.rmtree(Path(store) / "clusters" / spec.name, ignore_errors=True)
        owner = process_identity(os.getpid()) if owned else None
        registry.save({"spec": spec.to_json(), "state": {}, "faults": [], "owner": owner})
        cluster = cls(spec, store, {}, build_image)
        try:
            cluster._create()
            on_nodes(cluster.nodes, lambda n: cluster.db.setup(n, cluster.nodes))
            on_nodes(cluster.nodes, lambda n: cluster.db.wait_ready(n, ready_timeout))
        except BaseException:
            cluster.down()
            raise
        return cluster

    def _create(self) -> None:
        def record(state: dict[str, Any]) -> None:
            self.state = state
            self.registry.update(state=state)

        record(self.backend.create(record))
        self.nodes = self.backend.nodes(self.state)

    @classmethod
    def attach(cls, name: str, store: str | os.PathLike[str] = "store") -> Cluster:
        """The cluster recorded under `name`, as left by whoever made it."""
        data = Registry(store, name).load()
        if data is None:
            raise ClusterError(f"no cluster named {name!r} is registered in {store}/.faults")
        return cls(ClusterSpec.from_json(data["spec"]), store, data.get("state", {}))

    # --- faults ---------------------------------------------------------
    def nemesis_context(
        self,
        *,
        seed: int = 0,
        roles: Roles | None = None,
        key_map: KeyMap | None = None,
        group: str = "jepka",
    ) -> NemesisContext:
        """What nemeses need; roles (controller, leaders, coordinators) are
        asked of the live cluster through a Kafka client unless given;
        ``key_map`` and ``group`` are the workload's, for targets such as a
        key's leader or the group's coordinator."""
        rng = random.Random(seed)
        return NemesisContext(
            nodes=self.nodes,
            db=self.db,
            client_address=self.client_address,
            roles=roles
            or KafkaRoles(
                self.nodes, self.db.port, random.Random(f"{seed}:roles"), brokers=self.brokers
            ),
            record=self.registry.add_fault,
            rng=rng,
            key_map=key_map or KeyMap(),
            group=group,
        )

    def heal(self, ready_timeout: float = 60.0) -> None:
        """Undoes every fault on every node, as each fault family says
        (``nemesis.package.NODE_HEALS``), and waits until every broker
        answers; idempotent."""

        def heal_node(node: Node) -> None:
            for heal in NODE_HEALS:
                heal(node, self.db, self.nodes)
            self.db.wait_ready(node, ready_timeout)

        self.nodes = self.backend.restore(self.state, self.nodes)
        on_nodes(self.nodes, heal_node)
        self.registry.update(faults=[])

    @contextlib.contextmanager
    def healing(self) -> Iterator[Cluster]:
        """Heals on the way out, however the block ends: normally, by an
        exception, Ctrl-C, or SIGTERM/SIGHUP (turned into `SystemExit` while
        inside, then re-raised after the heal)."""
        with stop_signals_exit():  # also while healing: a second signal is ignored
            try:
                yield self
            finally:
                self.heal()

    def down(self) -> None:
        """Stops brokers and removes every trace of the cluster (rules,
        namespaces, bridges, containers, volumes, the registry entry)."""

        def stop_node(node: Node) -> None:
            node.run(iptables.remove_line(), check=False)
            self.db.resume(node)
            self.db.kill(node)

        try:
            if not self.backend.destroy_ends_processes:
                on_nodes(self.nodes, stop_node)
        finally:
            try:
                self.backend.destroy(self.state)
            finally:
                self.close()
        self.registry.remove()

    def close(self) -> None:
        """Closes the connections to the nodes (the cluster itself stays)."""
        for node in self.nodes:
            node.remote.close()

    def status(self) -> list[dict[str, Any]]:
        def one(node: Node) -> dict[str, Any]:
            try:
                state = self.db.state(node)
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
        return [
            path
            for node in self.nodes
            for path in self.db.collect_logs(node, os.path.join(dest, node.name))
        ]


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
