"""The ssh backend against real sshd daemons, each inside a network
namespace node: brokers started over SSH, faults applied over SSH."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

from control.db.base import process_state
from control.net import iptables
from harness.cluster import Cluster, ClusterSpec
from nemesis.package import build
from tests.nemesis.probes import api_versions_answers, connection_matrix

pytestmark = [pytest.mark.integration, pytest.mark.netns, pytest.mark.broker, pytest.mark.slow]


@pytest.mark.parametrize("login", ["root", "sudo"])
def test_brokers_and_faults_over_ssh(
    ssh_hosts: tuple[list[str], str, str],
    tmp_path: Path,
    login: str,
    request: pytest.FixtureRequest,
) -> None:
    hosts, key, gateway = ssh_hosts
    user = request.getfixturevalue("ssh_sudo_user") if login == "sudo" else "root"
    spec = ClusterSpec(
        name=f"s{uuid.uuid4().hex[:8]}",
        backend="ssh",
        hosts=tuple(hosts),
        ssh_key=key,
        ssh_user=user,
        node_root=str(tmp_path / "nodes"),
        broker_command=(sys.executable, "-m", "harness", "broker"),
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
