"""The `local` backend: each node a process in its own network namespace.

Nodes hang off a Linux bridge by veth pairs, each cluster in its own /24 of
198.18.0.0/15 with interface and namespace names derived from the cluster
name, so parallel clusters never collide. The bridge holds `.1`, which is how
the harness (in the root namespace) reaches nodes and how nodes see clients.

Once Docker has run, bridged frames traverse the root FORWARD chain (policy
DROP, br_netfilter); a scoped ACCEPT rule for our bridge lets node-to-node
traffic through and is removed at teardown.
"""

from __future__ import annotations

import fcntl
import hashlib
import ipaddress
import logging
import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any, ClassVar

from control.backends.base import InstalledBroker, Node, Record
from control.remote import Result

log = logging.getLogger(__name__)

POOL = ipaddress.ip_network("198.18.0.0/15")
#: /24s of the pool kept for the docker backend (see docker-compose.yml).
DOCKER_SUBNETS = 16
LOCK_PATH = "/run/lock/jepka-net.lock" if os.path.isdir("/run/lock") else "/tmp/jepka-net.lock"


def _sh(argv: list[str], *, check: bool = True, timeout: float = 30.0) -> Result:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    result = Result(proc.returncode, proc.stdout, proc.stderr)
    if check and proc.returncode != 0:
        raise RuntimeError(f"`{' '.join(argv)}` exited {proc.returncode}: {proc.stderr.strip()}")
    return result


class NetnsRemote:
    """Runs shell lines inside one network namespace (`ip netns exec`). The
    filesystem is shared with the harness, so copies are plain copies."""

    def __init__(self, netns: str) -> None:
        self.netns = netns

    def execute(self, line: str, *, timeout: float = 60.0) -> Result:
        try:
            return _sh(
                ["ip", "netns", "exec", self.netns, "sh", "-c", line], check=False, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return Result(124, "", f"timed out after {timeout}s")

    def upload(self, local: str, remote: str) -> None:
        os.makedirs(os.path.dirname(remote) or ".", exist_ok=True)
        shutil.copyfile(local, remote)

    def download(self, remote: str, local: str) -> None:
        os.makedirs(os.path.dirname(local) or ".", exist_ok=True)
        shutil.copyfile(remote, local)

    def close(self) -> None:
        pass


@dataclass(frozen=True, slots=True)
class LocalNames:
    """Every kernel object name of one local cluster (all ≤ 15 characters)."""

    tag: str
    bridge: str
    subnet: str

    def netns(self, i: int) -> str:
        return f"jk-{self.tag}-n{i}"

    def veth(self, i: int) -> str:
        return f"jk{self.tag}n{i}"

    def veth_peer(self, i: int) -> str:
        return f"jk{self.tag}p{i}"

    @property
    def gateway(self) -> str:
        return str(ipaddress.ip_network(self.subnet)[1])

    def address(self, i: int) -> str:
        return str(ipaddress.ip_network(self.subnet)[10 + i])


def cluster_tag(name: str) -> str:
    """A short, stable tag for a cluster name (6 hex digits)."""
    return hashlib.sha1(name.encode()).hexdigest()[:6]


def used_subnets() -> set[str]:
    out = _sh(["ip", "-o", "-4", "addr", "show"], check=False).out
    used = set()
    for line in out.splitlines():
        parts = line.split()
        if "inet" in parts:
            iface = ipaddress.ip_interface(parts[parts.index("inet") + 1])
            used.add(str(ipaddress.ip_network(f"{iface.ip}/24", strict=False)))
    return used


def choose_subnet(name: str, used: set[str]) -> str:
    """The first free /24 of the pool at or after the name's hash, skipping
    the range kept for the docker backend."""
    subnets = list(POOL.subnets(new_prefix=24))[:-DOCKER_SUBNETS]
    start = int(cluster_tag(name), 16) % len(subnets)
    for k in range(len(subnets)):
        candidate = str(subnets[(start + k) % len(subnets)])
        if candidate not in used:
            return candidate
    raise RuntimeError("no free /24 left in 198.18.0.0/15 for a local cluster")


@contextmanager
def net_lock() -> Iterator[None]:
    with open(LOCK_PATH, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _forward_rule(names: LocalNames) -> list[str]:
    return [
        "FORWARD",
        "-i",
        names.bridge,
        "-o",
        names.bridge,
        "-j",
        "ACCEPT",
        "-m",
        "comment",
        "--comment",
        f"jepka-{names.tag}",
    ]


def create_network(name: str, count: int) -> LocalNames:
    """Creates the bridge, namespaces and veth pairs of a cluster; the caller
    records the returned names before anything else can fail."""
    with net_lock():
        tag = cluster_tag(name)
        names = LocalNames(tag=tag, bridge=f"jkb{tag}", subnet=choose_subnet(name, used_subnets()))
        _sh(["ip", "link", "add", names.bridge, "type", "bridge"])
        _sh(["ip", "addr", "add", f"{names.gateway}/24", "dev", names.bridge])
        _sh(["ip", "link", "set", names.bridge, "up"])
        _sh(["iptables", "-w", "-I", *_forward_rule(names)])
        # inside the lock: `sweep_stray_bridges` must never see this bridge without namespaces
        _add_nodes(names, count)
    return names


def _add_nodes(names: LocalNames, count: int) -> None:
    for i in range(1, count + 1):
        ns, veth, peer = names.netns(i), names.veth(i), names.veth_peer(i)
        _sh(["ip", "netns", "add", ns])
        _sh(["ip", "link", "add", veth, "type", "veth", "peer", "name", peer])
        _sh(["ip", "link", "set", peer, "netns", ns])
        inside = ["ip", "netns", "exec", ns]
        _sh([*inside, "ip", "link", "set", peer, "name", "eth0"])
        _sh([*inside, "ip", "addr", "add", f"{names.address(i)}/24", "dev", "eth0"])
        _sh([*inside, "ip", "link", "set", "eth0", "up"])
        _sh([*inside, "ip", "link", "set", "lo", "up"])
        _sh(["ip", "link", "set", veth, "master", names.bridge])
        _sh(["ip", "link", "set", veth, "up"])


def namespace_pids(netns: str) -> list[int]:
    out = _sh(["ip", "netns", "pids", netns], check=False).out
    return [int(p) for p in out.split()]


def destroy_network(names: LocalNames, count: int) -> None:
    """Removes everything `create_network` made; idempotent, and safe on a
    half-built cluster. Processes still inside a namespace are ours (we
    created the namespace) and are killed first."""
    for i in range(1, count + 1):
        ns = names.netns(i)
        for pid in namespace_pids(ns):
            with suppress(ProcessLookupError):
                os.kill(pid, 9)
        _sh(["ip", "netns", "del", ns], check=False)
        _sh(["ip", "link", "del", names.veth(i)], check=False)
    _sh(["ip", "link", "del", names.bridge], check=False)
    while _sh(["iptables", "-w", "-D", *_forward_rule(names)], check=False).exit == 0:
        pass


def existing_namespaces(names: LocalNames) -> list[str]:
    out = _sh(["ip", "netns", "list"], check=False).out
    prefix = f"jk-{names.tag}-"
    return [line.split()[0] for line in out.splitlines() if line.startswith(prefix)]


def sweep_stray_bridges() -> list[str]:
    """Removes cluster bridges (and their FORWARD rules) that have no
    namespace left: what a run leaves when it dies inside `destroy_network`,
    after its store, and so its registry entry, is gone. A bridge with
    namespaces may belong to a live cluster of another store and is kept.
    Returns the bridges removed."""
    with net_lock():
        out = _sh(["ip", "-o", "link", "show", "type", "bridge"], check=False).out
        bridges = [line.split(":")[1].strip().split("@")[0] for line in out.splitlines()]
        removed = []
        for bridge in bridges:
            tag = bridge.removeprefix("jkb")
            if tag == bridge or len(tag) != 6:
                continue
            names = LocalNames(tag=tag, bridge=bridge, subnet="")
            if not existing_namespaces(names):
                destroy_network(names, 0)
                removed.append(bridge)
    return removed


def make_nodes(names: LocalNames, count: int, root: str) -> list[Node]:
    return [
        Node(
            name=f"n{i}",
            address=names.address(i),
            remote=NetnsRemote(names.netns(i)),
            root=os.path.join(root, f"n{i}"),
            node_id=i,
        )
        for i in range(1, count + 1)
    ]


@dataclass(frozen=True)
class LocalBackend:
    """A cluster's nodes as namespaces on this machine; `root` holds their data."""

    name: str
    count: int
    root: str

    destroy_ends_processes: ClassVar[bool] = False
    installed_broker: ClassVar[InstalledBroker | None] = None

    def create(self, record: Record) -> dict[str, Any]:
        for bridge in sweep_stray_bridges():
            log.warning("removed bridge %s, left without namespaces by a dead run", bridge)
        tag = cluster_tag(self.name)
        # the names before anything exists, so a crash half-way is cleanable
        record({"tag": tag, "bridge": f"jkb{tag}", "subnet": "pending"})
        made = create_network(self.name, self.count)
        return {"tag": made.tag, "bridge": made.bridge, "subnet": made.subnet}

    def nodes(self, state: Mapping[str, Any]) -> list[Node]:
        if state.get("subnet", "pending") == "pending":
            return []
        return make_nodes(_names(state), self.count, self.root)

    def client_address(self, state: Mapping[str, Any], nodes: list[Node]) -> str:
        return _names(state).gateway

    def restore(self, state: Mapping[str, Any], nodes: list[Node]) -> list[Node]:
        """Namespaces outlive every fault: nothing to bring back."""
        return nodes

    def destroy(self, state: Mapping[str, Any]) -> None:
        if "tag" in state:
            destroy_network(_names(state), self.count)


def _names(state: Mapping[str, Any]) -> LocalNames:
    return LocalNames(state["tag"], state["bridge"], state.get("subnet", ""))
