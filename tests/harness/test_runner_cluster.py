"""`jepka test` on a replicated 3-node reference cluster: the nodes form one
combined-mode cluster, topics run at RF 3 / min ISR 2, partitions cut the
cluster while the clients run, and the run still ends valid."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from control.backends.base import ClusterError, Node
from control.backends.local import NetnsRemote, cluster_tag
from control.db.base import DaemonDB
from control.db.reference import ReferenceBroker
from control.remote import Result
from harness.cluster import Cluster, ClusterSpec, make_backend, make_db
from harness.spec import SpecError, resolve
from tests.eventually import eventually
from tests.harness.runs import history_ops, run_replicated
from tests.nemesis.probes import leftovers


class LocalShell(NetnsRemote):
    """Runs a node's shell lines right here (the node's root is a temp dir)."""

    def execute(self, line: str, *, timeout: float = 60.0) -> Result:
        proc = subprocess.run(["sh", "-c", line], capture_output=True, text=True, timeout=timeout)
        return Result(proc.returncode, proc.stdout, proc.stderr)


def _nodes(count: int) -> list[Node]:
    return [
        Node(f"n{i}", f"198.18.7.{10 + i}", NetnsRemote(f"jk-x-n{i}"), f"/srv/n{i}", i)
        for i in range(1, count + 1)
    ]


def test_nodes_of_a_cluster_share_one_voters_list() -> None:
    nodes = _nodes(3)
    db = ReferenceBroker(["jepka", "broker"], bugs=["early-ack"])
    voters = "1@198.18.7.11:9093,2@198.18.7.12:9093,3@198.18.7.13:9093"
    for node in nodes:
        argv = db.command(node, nodes)
        assert argv[argv.index("--voters") + 1] == voters
        assert argv[argv.index("--node-id") + 1] == str(node.node_id)
        assert argv[argv.index("--listen") + 1] == f"{node.address}:9092"
        assert argv[-2:] == ["--bug", "early-ack"]


def test_single_and_independent_nodes_run_without_voters() -> None:
    one = _nodes(1)
    assert "--voters" not in ReferenceBroker(["jepka", "broker"]).command(one[0], one)
    three = _nodes(3)

    def db(**fields: Any) -> DaemonDB:
        spec = ClusterSpec(**fields)
        return make_db(spec, make_backend(spec, Path(".")))

    assert "--voters" not in db(nodes=3, replicated=False).command(three[0], three)
    assert "--voters" not in db(backend="docker", replicated=False).command(three[0], three)
    assert "--voters" in db(nodes=3).command(three[0], three)
    assert "--voters" in db(backend="docker").command(three[0], three)


def test_docker_nodes_run_the_broker_their_image_installs() -> None:
    spec = ClusterSpec(backend="docker", bugs=("early-ack",))
    db = make_db(spec, make_backend(spec, Path(".")))
    assert isinstance(db, ReferenceBroker)
    assert db.config_path == "/etc/jepka/broker.properties"
    three = _nodes(3)
    assert db.command(three[0], three)[:3] == ["python3", "-m", "broker"]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"backend": "ssh"}, "backend ssh needs hosts"),
        ({"backend": "docker", "nodes": 5}, "3 nodes of docker-compose.yml"),
        ({"hosts": ("198.18.0.11",)}, "hosts are for backend ssh"),
        ({"backend": "kubernetes"}, "unknown backend 'kubernetes'"),
    ],
)
def test_a_spec_its_backend_cannot_serve_is_refused(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ClusterError, match=message):
        ClusterSpec(**fields).validate()


def test_a_cluster_that_died_while_making_its_network_has_no_nodes_yet(tmp_path: Path) -> None:
    spec = ClusterSpec(name="half")
    pending = {"tag": "abc123", "bridge": "jkbabc123", "subnet": "pending"}
    assert Cluster(spec, tmp_path, pending).nodes == []


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.broker
@pytest.mark.spark
@pytest.mark.netns
def test_queue_under_partitions_on_a_replicated_cluster_is_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, store = run_replicated(
        tmp_path,
        capsys,
        *("--workload", "queue", "--nemesis", "partition", "--nemesis-interval", "3"),
        *("--time-limit", "12", "--rate", "40", "--concurrency", "4", "--seed", "1"),
        *("--recovery-time", "2", "--final-time-limit", "30", "--key-count", "4"),
    )
    assert "valid: True" in out
    run = (store / "latest").resolve()
    test = json.loads((run / "test.json").read_text())
    assert test["nodes"] == ["n1", "n2", "n3"] and len(test["bootstrap"].split(",")) == 3

    ops = history_ops(run)
    cuts = [
        o["value"]
        for o in ops
        if o["process"] == "nemesis" and o["f"] == "start-partition" and o["type"] != "invoke"
    ]
    assert cuts and all(set(c["grudge"]) <= {"n1", "n2", "n3"} for c in cuts), cuts
    assert any(o["process"] == "nemesis" and o["f"] == "stop-partition" for o in ops)
    assert sum(o["type"] == "ok" and o["f"] == "send" for o in ops) > 50

    # One cluster, not three single brokers: every node followed the same quorum.
    for name in ("n1", "n2", "n3"):
        stdout = (run / "nodes" / name / "broker.stdout").read_text()
        assert f"jepka broker ready node_id={name[1:]}" in stdout
    logs = "".join((run / "nodes" / n / "broker.log").read_text() for n in ("n1", "n2", "n3"))
    assert "registered with broker epoch" in logs
    assert not leftovers(cluster_tag(f"jt{os.getpid()}"))


def test_replication_defaults_follow_the_node_count() -> None:
    """Three replicated nodes by default (RF 3, min ISR 2, as a production
    cluster); fewer nodes scale the defaults down; explicit values win."""
    default = resolve(None, {})
    assert (default.nodes, default.replication_factor, default.min_isr) == (3, 3, 2)
    one = resolve(None, {"nodes": 1})
    assert (one.replication_factor, one.min_isr) == (1, 1)
    five = resolve(None, {"nodes": 5})
    assert (five.replication_factor, five.min_isr) == (3, 2)
    assert resolve(None, {"bootstrap": "h:9092"}).replication_factor == 1
    assert resolve({"replication_factor": 2}, {"min_isr": 1}).min_isr == 1
    with pytest.raises(SpecError, match="needs at least that many nodes"):
        resolve(None, {"nodes": 2, "replication_factor": 3})


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.docker
def test_compose_nodes_form_one_cluster(tmp_path: Path) -> None:
    """A topic at RF 3 on the replicated compose cluster has a replica on
    each container, every one of them in the ISR."""
    from confluent_kafka.admin import NewTopic

    from tests.control.backends.conftest import docker_unavailable
    from tests.control.backends.test_docker import project_objects
    from workloads.handles import Clients

    reason = docker_unavailable()
    if reason:
        pytest.skip(reason)
    spec = ClusterSpec(name=f"r{uuid.uuid4().hex[:8]}", backend="docker")
    cluster = Cluster.up(spec, tmp_path)
    project = cluster.state["project"]
    try:
        with Clients() as clients:
            admin = clients.admin({"bootstrap.servers": cluster.bootstrap})
            admin.create_topics([NewTopic("rf3", 2, 3)])["rf3"].result(timeout=30)
            md = eventually(  # every node applies the creation in its own time
                lambda: m if "rf3" in (m := admin.list_topics(timeout=30)).topics else None,
                30,
                interval=0.2,
                what="rf3 never showed in the metadata",
            )
            assert sorted(md.brokers) == [1, 2, 3]
            for p in md.topics["rf3"].partitions.values():
                assert sorted(p.replicas) == [1, 2, 3] and sorted(p.isrs) == [1, 2, 3]
    finally:
        cluster.down()
    assert project_objects(project) == []
