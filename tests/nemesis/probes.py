"""Observations a fault test makes from outside: real TCP connections, raw
Kafka requests, process states. Shared by the nemesis and backend tests."""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import subprocess
from collections.abc import Sequence

from control.backends.base import Node

# Tries a TCP connection to each address concurrently; prints the reachable ones.
_CONNECT = r"""
import json, socket, sys, threading
port = int(sys.argv[1]); ok = []
def go(a):
    try:
        socket.create_connection((a, port), timeout=float(sys.argv[2])).close(); ok.append(a)
    except OSError:
        pass
ts = [threading.Thread(target=go, args=(a,)) for a in sys.argv[3:]]
[t.start() for t in ts]; [t.join() for t in ts]
print(json.dumps(sorted(ok)))
"""


def reachable_from(
    node: Node, targets: Sequence[Node], port: int, timeout: float = 1.0
) -> set[str]:
    """Names of `targets` a real TCP connection from `node` reaches."""
    import shlex

    argv = ["python3", "-c", _CONNECT, str(port), str(timeout), *(t.address for t in targets)]
    out = node.run(shlex.join(argv), timeout=30).out
    addresses = set(json.loads(out.strip().splitlines()[-1]))
    return {t.name for t in targets if t.address in addresses}


def connection_matrix(nodes: Sequence[Node], port: int) -> set[frozenset[str]]:
    """Unordered node pairs whose TCP connections fail (in either direction
    of initiation: both are tried)."""
    blocked: set[frozenset[str]] = set()
    for src in nodes:
        others = [n for n in nodes if n is not src]
        ok = reachable_from(src, others, port)
        blocked |= {frozenset((src.name, o.name)) for o in others if o.name not in ok}
    return blocked


def api_versions_answers(address: str, port: int, timeout: float = 1.5) -> bool:
    """Whether a broker answers a Kafka ApiVersions v0 request in time."""
    client_id = b"jepka-probe"
    body = struct.pack(">hhih", 18, 0, 4242, len(client_id)) + client_id
    try:
        with socket.create_connection((address, port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(struct.pack(">i", len(body)) + body)
            header = s.recv(8)
            return len(header) == 8 and struct.unpack(">ii", header)[1] == 4242
    except OSError:
        return False


def netns_available() -> str | None:
    """None when network namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "needs root for network namespaces"
    for tool in ("ip", "iptables"):
        if not shutil.which(tool):
            return f"`{tool}` is not installed (scripts/setup-system.sh)"
    name = f"jk-probe-{os.getpid()}"  # test workers probe at the same time
    probe = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    if probe.returncode != 0:
        return f"cannot create network namespaces: {probe.stderr.strip()}"
    return None


def leftovers(tag: str) -> list[str]:
    """Kernel objects of a local cluster still present (namespaces, links,
    FORWARD rules)."""
    found = []
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    found += [line.split()[0] for line in ns.splitlines() if f"jk-{tag}-" in line]
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    found += [
        line.split(":")[1].strip()
        for line in links.splitlines()
        if f"jk{tag}" in line or f"jkb{tag}" in line
    ]
    rules = subprocess.run(
        ["iptables", "-w", "-S", "FORWARD"], capture_output=True, text=True
    ).stdout
    found += [line for line in rules.splitlines() if f"jepka-{tag}" in line]
    return found
