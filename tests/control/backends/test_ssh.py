"""The ssh backend against real sshd daemons, each inside a network
namespace node: brokers started over SSH, faults applied over SSH."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

from control.backends.base import ClusterError
from control.backends.ssh import SshBackend, SshConfig, SshRemote
from control.db.base import process_state
from control.net import iptables
from harness.cluster import Cluster, ClusterSpec
from nemesis.package import build
from tests.control.backends.conftest import SshHosts
from tests.nemesis.probes import api_versions_answers, connection_matrix

pytestmark = [pytest.mark.integration, pytest.mark.netns, pytest.mark.broker, pytest.mark.slow]


# a sudo login live in `make acceptance`; the root one runs every time
@pytest.mark.parametrize("login", ["root", pytest.param("sudo", marks=pytest.mark.acceptance)])
def test_brokers_and_faults_over_ssh(
    ssh_hosts: SshHosts,
    tmp_path: Path,
    login: str,
    request: pytest.FixtureRequest,
) -> None:
    hosts, key, gateway, ssh_config = ssh_hosts
    user = request.getfixturevalue("ssh_sudo_user") if login == "sudo" else "root"
    spec = ClusterSpec(
        name=f"s{uuid.uuid4().hex[:8]}",
        backend="ssh",
        hosts=tuple(hosts),
        ssh_key=key,
        ssh_user=user,
        ssh_config=ssh_config,
        node_root=str(tmp_path / "nodes"),
        broker_command=(sys.executable, "-m", "broker"),
    )
    cluster = Cluster.up(spec, tmp_path / "store")
    try:
        with cluster.nemesis_context(seed=3) as ctx:
            assert [n.address for n in cluster.nodes] == hosts
            assert cluster.client_address == gateway  # as the hosts see the harness
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


def test_an_unknown_host_key_is_refused_unless_checking_is_off(
    ssh_hosts: SshHosts, tmp_path: Path
) -> None:
    empty = tmp_path / "ssh_config"  # no known_hosts of these hosts
    empty.write_text(f"Host *\n  UserKnownHostsFile {tmp_path}/none\n")
    strict = SshRemote(
        ssh_hosts.hosts[0], SshConfig(key_file=ssh_hosts.key, config_file=str(empty))
    )
    try:
        with pytest.raises(ClusterError, match=r"not in known_hosts.*--no-ssh-check-host-keys"):
            strict.execute("true")
    finally:
        strict.close()
    trusting = SshConfig(key_file=ssh_hosts.key, config_file=str(empty), check_host_keys=False)
    remote = SshRemote(ssh_hosts.hosts[0], trusting)
    try:
        assert remote.execute("echo ok").out == "ok\n"
    finally:
        remote.close()


def test_the_ssh_config_names_hosts_and_jumps_through_another(
    ssh_hosts: SshHosts, tmp_path: Path
) -> None:
    """A Host alias with its HostName, User and IdentityFile, reached through a
    ProxyJump host: the connection arrives from the jump host, and the node's
    address is the resolved name (clients connect there)."""
    first, second, _ = ssh_hosts.hosts
    config = tmp_path / "ssh_config"
    config.write_text(
        f"Host kafka2\n  HostName {second}\n  User root\n  ProxyJump {first}\n"
        f"Host *\n  IdentityFile {ssh_hosts.key}\n"
        f"  UserKnownHostsFile {Path(ssh_hosts.config).parent}/known_hosts\n"
    )
    backend = SshBackend(("kafka2",), SshConfig(config_file=str(config)), "/tmp/j", str(tmp_path))
    [node] = backend.nodes({})
    try:
        assert node.address == second
        assert node.run("echo $SSH_CLIENT").out.split()[0] == first
        # the clients' address is this machine's towards the host, not the jump host's
        assert backend.client_address({}, [node]) == ssh_hosts.gateway
    finally:
        node.remote.close()
