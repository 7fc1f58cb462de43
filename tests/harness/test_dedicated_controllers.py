"""`jepka test --controllers N`: N controller-only nodes after the broker nodes,
which alone are the quorum's voters, as production KRaft runs; the brokers
follow it. Only the local backend with the reference broker runs them; any
other is refused naming the setting. Live, a short run that kills the active
controller ends valid."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from control.backends.base import ClusterError, Node
from control.backends.local import NetnsRemote
from control.db.reference import ReferenceBroker, reference_properties
from harness.cluster import Cluster, ClusterSpec, make_backend, make_db
from harness.runner import cluster_spec
from harness.spec import SpecError, resolve
from tests.harness.runs import history_ops, run_replicated


def nodes(count: int) -> list[Node]:
    return [
        Node(f"n{i}", f"198.18.7.{10 + i}", NetnsRemote(f"jk-x-n{i}"), f"/srv/n{i}", i)
        for i in range(1, count + 1)
    ]


def test_controller_only_nodes_are_the_voters_and_brokers_follow() -> None:
    spec = ClusterSpec(nodes=3, controllers=3).validate()
    assert (spec.count, spec.broker_count, spec.controller_ids) == (6, 3, frozenset({4, 5, 6}))
    db = make_db(spec, make_backend(spec, Path(".")))
    assert isinstance(db, ReferenceBroker)
    six = nodes(6)
    voters = "4@198.18.7.14:9093,5@198.18.7.15:9093,6@198.18.7.16:9093"
    for node in six:
        argv = db.command(node, six)
        assert argv[argv.index("--voters") + 1] == voters
        port = 9093 if node.node_id > 3 else 9092  # a controller: its controller listener
        assert argv[argv.index("--listen") + 1] == f"{node.address}:{port}"
    assert Cluster(spec, ".", {}).brokers == []  # no network yet, no nodes


def test_the_properties_give_each_node_its_role_and_the_brokers_settings() -> None:
    six = nodes(6)
    props = reference_properties(six[0], six, {}, frozenset({4, 5, 6}))
    assert "process.roles=broker\n" in props and "default.replication.factor=3\n" in props
    assert "process.roles=controller\n" in reference_properties(six[4], six, {}, frozenset({5}))
    assert "process.roles" not in reference_properties(six[0], six[:3], {})


def test_the_run_spec_carries_the_controllers_to_the_cluster() -> None:
    spec = resolve(None, {"nodes": 3, "controllers": 3})
    assert (spec.replication_factor, cluster_spec(spec).controllers) == (3, 3)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"backend": "docker", "controllers": 3}, "controllers: .* not backend docker"),
        ({"db": "kafka", "kafka_home": "/opt/kafka", "controllers": 3}, "with db kafka"),
        ({"replicated": False, "controllers": 3}, "broker, not independent brokers"),
        ({"controllers": 10}, "controllers must be 0..9"),
    ],
)
def test_other_backends_refuse_controllers(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ClusterError, match=message):
        ClusterSpec(**fields).validate()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"controllers": 3, "cluster": "docker"}, "--controllers 3: .* not with --cluster docker"),
        ({"controllers": 3, "bootstrap": "h:9092"}, "not with --bootstrap"),
    ],
)
def test_jepka_test_refuses_controllers_where_they_cannot_run(
    settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(SpecError, match=message):
        resolve(None, settings)


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.broker
@pytest.mark.spark
@pytest.mark.netns
def test_a_run_that_kills_the_dedicated_controller_is_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schedule = tmp_path / "faults.yml"
    kill = {"at": 2, "fault": "kill", "target": "controller", "duration": 3}
    schedule.write_text(yaml.safe_dump({"faults": [kill]}))
    _, store = run_replicated(
        tmp_path,
        capsys,
        *("--controllers", "3", "--workload", "queue", "--schedule", str(schedule)),
        *("--time-limit", "8", "--rate", "40", "--concurrency", "4", "--key-count", "4"),
        *("--recovery-time", "2", "--final-time-limit", "20", "--seed", "3"),
    )
    (run,) = [p for p in store.glob("queue-*/2*") if p.is_dir()]
    assert json.loads((run / "results.json").read_text())["valid"] is True
    (fault,) = yaml.safe_load((run / "faults.yml").read_text())["faults"]
    assert fault["resolved"]["killed"][0] in {"n4", "n5", "n6"}  # a controller-only node
    ops = history_ops(run)
    after = [o for o in ops if o["type"] == "ok" and o["f"] == "send" and o["time"] > 3e9]
    assert after, "no write acknowledged after the controller was killed"
    stdout = (run / "nodes" / "n4" / "broker.stdout").read_text()
    assert "jepka broker ready node_id=4 listen=" in stdout and ":9093" in stdout
