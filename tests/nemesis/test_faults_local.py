"""Each fault bites, and only where intended, on real namespaces and brokers."""

from __future__ import annotations

import datetime
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import NewTopic

from control.backends.base import Node
from control.db.base import faketime_file, process_state
from control.net import iptables
from harness.cluster import Cluster
from nemesis.base import NemesisContext
from nemesis.grudge import blocked_pairs
from nemesis.package import build
from nemesis.roles import KafkaRoles
from tests.nemesis.probes import api_versions_answers, connection_matrix
from workloads.handles import Clients

pytestmark = [pytest.mark.integration, pytest.mark.netns, pytest.mark.broker, pytest.mark.slow]


def op(f: str, value: object = None) -> dict:
    return {"process": "nemesis", "type": "invoke", "f": f, "value": value}


@pytest.mark.parametrize("kind", ["one", "majority", "majorities-ring", "bridge", "minority-third"])
def test_partition_blocks_exactly_the_grudge(
    cluster: Cluster, nemesis_context: Callable[..., NemesisContext], kind: str
) -> None:
    pkg = build("partition", seed=11)
    ctx = nemesis_context(seed=hash(kind) % 1000)
    done = pkg.nemesis.invoke(ctx, op("start-partition", kind))
    grudge = {n: frozenset(v) for n, v in done["value"]["grudge"].items()}
    expected = blocked_pairs(grudge)
    if kind != "minority-third":  # a no-op on 3 nodes, as in Jepsen
        assert expected
    assert connection_matrix(cluster.nodes, cluster.db.port) == expected
    # Clients (root namespace) still reach every broker: only node links are cut.
    assert all(api_versions_answers(n.address, cluster.db.port) for n in cluster.nodes)
    pkg.nemesis.invoke(ctx, op("stop-partition"))
    assert connection_matrix(cluster.nodes, cluster.db.port) == set()
    assert all(iptables.rules(n) == [] for n in cluster.nodes)


def test_clients_partition_cuts_only_the_harness(
    cluster: Cluster, nemesis_context: Callable[..., NemesisContext]
) -> None:
    pkg = build("clients", seed=1)
    ctx = nemesis_context(seed=5)
    done = pkg.nemesis.invoke(ctx, op("start-partition", {"kind": "clients", "targets": "n2"}))
    assert done["value"]["cut"] == ["n2"]
    answers = {n.name: api_versions_answers(n.address, cluster.db.port, 1.0) for n in cluster.nodes}
    assert answers == {"n1": True, "n2": False, "n3": True}
    assert connection_matrix(cluster.nodes, cluster.db.port) == set()


def test_isolate_controller_asks_the_cluster(
    cluster: Cluster, nemesis_context: Callable[..., NemesisContext]
) -> None:
    class Roles:
        asked: list[str] = []

        def controller(self) -> str:
            self.asked.append("controller")
            return "n3"

        def close(self) -> None:
            pass

    roles = Roles()
    ctx = nemesis_context(seed=1, roles=roles)  # type: ignore[arg-type]
    done = build("isolate-controller", seed=1).nemesis.invoke(
        ctx, op("start-partition", "isolate-controller")
    )
    assert roles.asked == ["controller"]
    assert done["value"]["grudge"] == {"n1": ["n3"], "n2": ["n3"], "n3": ["n1", "n2"]}
    assert connection_matrix(cluster.nodes, cluster.db.port) == {
        frozenset(("n1", "n3")),
        frozenset(("n2", "n3")),
    }


def test_pause_stops_the_process_until_resumed(
    cluster: Cluster, nemesis_context: Callable[..., NemesisContext]
) -> None:
    pkg = build("pause", seed=1)
    ctx = nemesis_context()
    n2 = cluster.nodes[1]
    done = pkg.nemesis.invoke(ctx, op("pause", ["n2"]))
    assert done["value"] == {"paused": ["n2"]}
    assert process_state(n2) == "T"
    assert not api_versions_answers(n2.address, cluster.db.port, 1.0)
    assert api_versions_answers(cluster.nodes[0].address, cluster.db.port)
    pkg.nemesis.invoke(ctx, op("resume", "all"))
    assert process_state(n2) in ("S", "R")
    assert api_versions_answers(n2.address, cluster.db.port)


def _create_topic(bootstrap: str, topic: str) -> None:
    # One replica per topic until replication exists: min ISR 1 lets acks=all succeed.
    new = NewTopic(topic, 1, 1, config={"min.insync.replicas": "1"})
    with Clients() as clients:
        admin = clients.admin({"bootstrap.servers": bootstrap})
        admin.create_topics([new])[topic].result(timeout=20)


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    _create_topic(bootstrap, topic)
    with Clients() as clients:
        producer = clients.producer({"bootstrap.servers": bootstrap, "acks": "all"})
        for v in values:
            producer.produce(topic, v)
        assert producer.flush(20) == 0


def _consume_all(bootstrap: str, topic: str, count: int) -> list[bytes]:
    got: list[bytes] = []
    with Clients() as clients:
        consumer = clients.consumer(
            {"bootstrap.servers": bootstrap, "group.id": "probe", "enable.auto.commit": False}
        )
        consumer.assign([TopicPartition(topic, 0, 0)])
        for _ in range(60):
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                got.append(msg.value())
            if len(got) >= count:
                break
    return got


def test_kill_removes_the_process_and_start_keeps_its_data(
    cluster: Cluster, nemesis_context: Callable[..., NemesisContext]
) -> None:
    n3 = cluster.nodes[2]
    bootstrap = f"{n3.address}:{cluster.db.port}"
    values = [f"v{i}".encode() for i in range(20)]
    _produce(bootstrap, "kill-probe", values)
    pkg = build("kill", seed=1)
    ctx = nemesis_context()
    pid = n3.run(f"cut -d' ' -f1 {n3.root}/broker.pid").out.strip()
    assert pkg.nemesis.invoke(ctx, op("kill", ["n3"]))["value"] == {"killed": ["n3"]}
    assert process_state(n3) == ""
    assert (
        not os.path.exists(f"/proc/{pid}")
        or Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    )
    assert not api_versions_answers(n3.address, cluster.db.port, 0.5)
    assert pkg.nemesis.invoke(ctx, op("start", "all"))["value"] == {"started": ["n3"]}
    assert _consume_all(bootstrap, "kill-probe", len(values)) == values


def _broker_clock(cluster: Cluster, node: Node) -> float:
    """The broker's own wall clock: it stamps its log lines with it, so make
    it log (create a topic) and read the stamp of that line."""
    topic = f"clock-{uuid.uuid4().hex[:8]}"
    _create_topic(f"{node.address}:{cluster.db.port}", topic)
    log = os.path.join(cluster.db.data_dir(node), "broker.log")
    line = next(line for line in reversed(Path(log).read_text().splitlines()) if topic in line)
    stamp = datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
    return stamp.timestamp()


def test_clock_bump_moves_the_broker_clock(
    cluster: Cluster, nemesis_context: Callable[..., NemesisContext]
) -> None:
    n1 = cluster.nodes[0]
    pid = n1.run(f"cut -d' ' -f1 {n1.root}/broker.pid").out.strip()
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    assert any(e.startswith(b"LD_PRELOAD=") and b"faketime" in e for e in environ)
    pkg = build("clock", seed=1)
    ctx = nemesis_context()
    done = pkg.nemesis.invoke(ctx, op("bump-clock", {"targets": ["n1"], "delta_ms": -7_200_000}))
    assert done["value"] == {"nodes": ["n1"], "offset_ms": -7_200_000.0}
    assert Path(faketime_file(n1)).read_text().strip() == "-7200.000"
    assert 7_100 < time.time() - _broker_clock(cluster, n1) < 7_300
    assert abs(time.time() - _broker_clock(cluster, cluster.nodes[1])) < 60  # others untouched
    pkg.nemesis.invoke(ctx, op("reset-clock", "all"))
    assert abs(time.time() - _broker_clock(cluster, n1)) < 60


def test_clock_strobe_flips_and_returns(
    cluster: Cluster, nemesis_context: Callable[..., NemesisContext]
) -> None:
    pkg = build("clock-strobe", seed=1)
    ctx = nemesis_context()
    value = {"targets": ["n2"], "delta_ms": 60_000, "period_ms": 50, "duration_s": 0.5}
    done = pkg.nemesis.invoke(ctx, op("strobe-clock", value))
    assert done["value"]["flips"] >= 2
    assert Path(faketime_file(cluster.nodes[1])).read_text().strip() == "+0.000"


def test_random_schedule_then_heal_leaves_nothing(
    cluster: Cluster, nemesis_context: Callable[..., NemesisContext]
) -> None:
    pkg = build("kill,pause,partition,clock", seed=42, interval=0.2)
    ctx = nemesis_context(seed=42)
    timeline = pkg.schedule(3)[:12]
    assert {o["f"] for _, o in timeline} & {"kill", "pause", "start-partition", "bump-clock"}
    for _, o in timeline:
        pkg.nemesis.invoke(ctx, {**o, "type": "invoke"})
    cluster.heal()
    for node in cluster.nodes:
        assert iptables.rules(node) == []
        assert process_state(node) in ("S", "R")
        assert Path(faketime_file(node)).read_text().strip() == "+0.000"
    assert connection_matrix(cluster.nodes, cluster.db.port) == set()
    assert cluster.registry.load()["faults"] == []


HEALER = """
import sys, time
from harness.cluster import Cluster
from nemesis.package import build
cluster = Cluster.attach(sys.argv[1], sys.argv[2])
with cluster.healing(), cluster.nemesis_context() as ctx:
    build("pause", seed=1).nemesis.invoke(
        ctx, {"process": "nemesis", "f": "pause", "value": ["n1"]})
    print("faulted", flush=True)
    time.sleep(120)
"""


def test_a_signalled_run_heals_on_its_way_out(cluster: Cluster) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", HEALER, cluster.spec.name, str(cluster.store)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "faulted"
        assert process_state(cluster.nodes[0]) == "T"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
    assert process_state(cluster.nodes[0]) in ("S", "R")
    assert api_versions_answers(cluster.nodes[0].address, cluster.db.port)


def test_isolate_coordinator_and_leader_with_live_roles(
    cluster: Cluster, nemesis_context: Callable[..., NemesisContext]
) -> None:
    ctx = nemesis_context(seed=2)  # asks the live cluster by default
    roles = ctx.roles
    assert isinstance(roles, KafkaRoles)
    holder = roles.coordinator("group", "g-iso")
    assert holder in {n.name for n in cluster.nodes}
    pkg = build("isolate-coordinator,isolate-leader", seed=2)
    done = pkg.nemesis.invoke(
        ctx, op("start-partition", {"kind": "isolate-coordinator", "group": "g-iso"})
    )
    others = sorted({n.name for n in cluster.nodes} - {holder})
    assert done["value"]["grudge"][holder] == others
    pkg.nemesis.invoke(ctx, op("stop-partition"))
    for node in cluster.nodes:  # brokers are independent until replication: tell each
        _create_topic(f"{node.address}:{cluster.db.port}", "lead")
    leader = roles.leader("lead", 0)
    done = pkg.nemesis.invoke(
        ctx, op("start-partition", {"kind": "isolate-leader", "topic": "lead", "partition": 0})
    )
    assert sorted(done["value"]["grudge"]) == sorted({leader, *others} | {holder})
    assert len(done["value"]["grudge"][leader]) == len(cluster.nodes) - 1
