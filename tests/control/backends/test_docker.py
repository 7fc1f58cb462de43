"""The docker backend: the compose cluster from the offline image, a short
fault schedule, heal, and nothing left behind."""

from __future__ import annotations

import time
import uuid
from functools import partial
from pathlib import Path

import pytest

from control.backends import docker as docker_backend
from control.db.base import RUNNING, process_state
from control.net import iptables
from harness.cluster import Cluster, ClusterSpec
from nemesis.grudge import blocked_pairs
from nemesis.package import build
from tests.eventually import eventually
from tests.nemesis.probes import api_versions_answers, connection_matrix

pytestmark = [pytest.mark.integration, pytest.mark.docker, pytest.mark.slow]


def project_objects(project: str) -> list[str]:
    """The ids of a Compose project's containers, volumes and networks."""
    client = docker_backend.client()
    label = {"label": f"com.docker.compose.project={project}"}
    kinds = (client.containers.list(all=True, filters=label), client.volumes.list(filters=label))
    return [o.id for found in (*kinds, client.networks.list(filters=label)) for o in found]


def test_compose_cluster_survives_a_fault_schedule(tmp_path: Path, docker_engine: None) -> None:
    spec = ClusterSpec(name=f"d{uuid.uuid4().hex[:8]}", backend="docker", nodes=3)
    cluster = Cluster.up(spec, tmp_path)  # builds the offline image if sources changed
    project = cluster.state["project"]
    try:
        with cluster.nemesis_context(seed=7) as ctx:
            assert [n.address.rsplit(".", 1)[1] for n in cluster.nodes] == ["11", "12", "13"]
            assert all(api_versions_answers(n.address, cluster.db.port) for n in cluster.nodes)
            pkg = build("kill,pause,partition", seed=7, interval=0.3)
            done = [pkg.nemesis.invoke(ctx, {**op, "type": "invoke"}) for _, op in pkg.schedule(4)]
            assert {d["f"] for d in done} >= {"kill", "pause", "start-partition"}
            assert all(d["type"] == "info" for d in done)

            grudge = pkg.nemesis.invoke(
                ctx, {"process": "nemesis", "f": "start-partition", "value": "majority"}
            )["value"]["grudge"]
            expected = blocked_pairs({k: frozenset(v) for k, v in grudge.items()})
            # the controller listener is up whenever the process is; the client port of a
            # node restarted by the schedule opens only once it reaches a quorum
            links = cluster.db.controller_port  # type: ignore[attr-defined]
            assert expected and connection_matrix(cluster.nodes, links) == expected
            pkg.nemesis.invoke(ctx, {"process": "nemesis", "f": "pause", "value": ["n3"]})
            assert process_state(cluster.nodes[2]) == "T"
            assert not api_versions_answers(cluster.nodes[2].address, cluster.db.port, 1.0)

            more = build("clients,clock,lose-unfsynced", seed=7)
            cut = more.nemesis.invoke(
                ctx,
                {
                    "process": "nemesis",
                    "f": "start-partition",
                    "value": {"kind": "clients", "targets": ["n1"]},
                },
            )
            assert cut["value"]["client"] == cluster.client_address
            assert not api_versions_answers(cluster.nodes[0].address, cluster.db.port, 1.0)
            n2 = cluster.nodes[1]
            more.nemesis.invoke(
                ctx,
                {
                    "process": "nemesis",
                    "f": "bump-clock",
                    "value": {"targets": ["n2"], "delta_ms": 3_600_000},
                },
            )
            assert n2.run("cat /data/faketime").out.strip() == "+3600.000"
            pid = n2.run("cut -d' ' -f1 /data/broker.pid").out.strip()
            assert "faketime" in n2.run(f"tr '\\0' '\\n' < /proc/{pid}/environ").out
            lost = more.nemesis.invoke(
                ctx, {"process": "nemesis", "f": "lose-unfsynced", "value": ["n2"]}
            )
            assert lost["value"]["nodes"] == ["n2"]
            assert n2.run("cut -d' ' -f1 /data/broker.pid").out.strip() != pid
            assert process_state(n2) in RUNNING

            docker_backend.container_of(cluster.nodes[0]).stop(timeout=1)
            cluster.heal()
            assert connection_matrix(cluster.nodes, links) == set()
            deadline = time.monotonic() + 60  # healed: the quorum forms again, brokers serve
            for node in cluster.nodes:
                assert node.run("cat /data/faketime").out.strip() == "+0.000"
                assert iptables.rules(node) == []
                assert process_state(node) in RUNNING
                eventually(
                    partial(api_versions_answers, node.address, cluster.db.port),
                    deadline - time.monotonic(),
                    interval=0,
                    what=f"{node.name} does not serve after heal",
                )
    finally:
        cluster.down()
    assert project_objects(project) == []
