"""The ssh backend against real sshd daemons, each inside a network
namespace node: brokers started over SSH, faults applied over SSH."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.backends import local
from harness.cluster import Cluster, ClusterSpec
from harness.db.base import process_state
from harness.net import iptables
from nemesis.package import build
from tests.nemesis.probes import api_versions_answers, connection_matrix, netns_available

pytestmark = [pytest.mark.integration, pytest.mark.netns, pytest.mark.broker, pytest.mark.slow]

SSHD = "/usr/sbin/sshd"


def wait_for_port(host: str, port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((host, port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.fixture
def ssh_hosts(tmp_path: Path) -> Iterator[tuple[list[str], str, str]]:
    """Three namespaces on a bridge, each running sshd; yields (hosts, key,
    the harness address the hosts see)."""
    reason = netns_available()
    if reason:
        pytest.skip(reason)
    if not os.path.exists(SSHD) or not shutil.which("ssh-keygen"):
        pytest.skip("openssh-server is not installed (scripts/setup-system.sh)")
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "host")], check=True
    )
    (tmp_path / "authorized_keys").write_text(Path(f"{key}.pub").read_text())
    os.makedirs("/run/sshd", exist_ok=True)
    names = local.create_network(f"ssh-{uuid.uuid4().hex[:8]}", 3)
    daemons: list[subprocess.Popen[bytes]] = []
    try:
        for i in range(1, 4):
            cfg = tmp_path / f"sshd{i}.conf"
            cfg.write_text(
                f"Port 22\nListenAddress {names.address(i)}\nHostKey {tmp_path}/host\n"
                f"PidFile {tmp_path}/sshd{i}.pid\nAuthorizedKeysFile {tmp_path}/authorized_keys\n"
                "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                "StrictModes no\nUsePAM no\nSubsystem sftp internal-sftp\n"
            )
            with open(tmp_path / f"sshd{i}.log", "wb") as log:
                argv = ["ip", "netns", "exec", names.netns(i), SSHD, "-D", "-e", "-f", str(cfg)]
                daemons.append(subprocess.Popen(argv, stdout=log, stderr=log))
        for i in range(1, 4):
            wait_for_port(names.address(i), 22)
        yield [names.address(i) for i in range(1, 4)], str(key), names.gateway
    finally:
        for daemon in daemons:
            daemon.terminate()
            daemon.wait(10)
        local.destroy_network(names, 3)


def test_brokers_and_faults_over_ssh(ssh_hosts: tuple[list[str], str, str], tmp_path: Path) -> None:
    hosts, key, gateway = ssh_hosts
    spec = ClusterSpec(
        name=f"s{uuid.uuid4().hex[:8]}",
        backend="ssh",
        hosts=tuple(hosts),
        ssh_key=key,
        node_root=str(tmp_path / "nodes"),
        broker_command=(sys.executable, "-m", "harness", "broker"),
    )
    cluster = Cluster.up(spec, tmp_path / "store")
    try:
        assert [n.address for n in cluster.nodes] == hosts
        assert cluster.client_address == gateway  # as the hosts see the harness
        ctx = cluster.nemesis_context(seed=3)
        pkg = build("kill,pause,partition,clock", seed=3)
        done = pkg.nemesis.invoke(
            ctx, {"process": "nemesis", "f": "start-partition", "value": "one"}
        )
        loner = next(n for n, d in done["value"]["grudge"].items() if len(d) == 2)
        others = {n.name for n in cluster.nodes} - {loner}
        assert connection_matrix(cluster.nodes, cluster.db.port) == {
            frozenset((loner, o)) for o in others
        }
        pkg.nemesis.invoke(ctx, {"process": "nemesis", "f": "pause", "value": ["n2"]})
        assert process_state(cluster.nodes[1]) == "T"
        pkg.nemesis.invoke(ctx, {"process": "nemesis", "f": "kill", "value": ["n3"]})
        assert process_state(cluster.nodes[2]) == ""
        cluster.heal()
        assert connection_matrix(cluster.nodes, cluster.db.port) == set()
        for node in cluster.nodes:
            assert iptables.rules(node) == []
            assert api_versions_answers(node.address, cluster.db.port)
        log = tmp_path / "store" / "clusters" / spec.name / "n1" / "ssh.log"
        assert "iptables" in log.read_text()
        got = cluster.collect_logs(tmp_path / "logs")
        assert any(p.endswith("broker.log") for p in got)
    finally:
        cluster.down()
    for host in hosts:
        assert not api_versions_answers(host, 9092, 0.5)
