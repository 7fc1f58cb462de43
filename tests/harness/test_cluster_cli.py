"""`jepka cluster` end to end on the local backend: up, faults, a crashed
harness, heal from the registry alone, down leaving nothing behind."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from control.db.base import RUNNING, process_state
from control.net import iptables
from harness.cli import main
from harness.cluster import Cluster, ClusterSpec, Registry
from nemesis.package import build
from tests.nemesis.probes import leftovers, netns_available

pytestmark = [pytest.mark.integration, pytest.mark.netns, pytest.mark.broker, pytest.mark.slow]


def jepka(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", "cluster", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_cluster_cli_heals_and_removes_a_dead_runs_leftovers(tmp_path: Path) -> None:
    reason = netns_available()
    if reason:
        pytest.skip(reason)
    name = f"c{uuid.uuid4().hex[:8]}"
    store = str(tmp_path / "store")
    up = jepka("up", "--name", name, "--store", store, "--nodes", "3")
    assert up.returncode == 0, up.stderr
    try:
        # A harness applies faults and "dies": only the registry remains.
        cluster = Cluster.attach(name, store)
        pkg = build("pause,partition,kill", seed=1)
        with cluster.nemesis_context(seed=1) as ctx:
            pkg.nemesis.invoke(ctx, {"process": "nemesis", "f": "start-partition", "value": "one"})
            pkg.nemesis.invoke(ctx, {"process": "nemesis", "f": "pause", "value": ["n1"]})
            pkg.nemesis.invoke(ctx, {"process": "nemesis", "f": "kill", "value": ["n2"]})
        faults = Registry(store, name).load()["faults"]
        assert [f["f"] for f in faults] == ["partition", "pause", "kill"]
        del cluster

        status = jepka("status", "--name", name, "--store", store)
        assert "broker=paused" in status.stdout and "broker=down" in status.stdout
        [listed] = json.loads(jepka("status", "--json", "--store", store).stdout)
        assert listed["cluster"] == name and len(listed["nodes"]) == 3
        healed = jepka("heal", "--store", store)
        assert healed.returncode == 0, healed.stderr
        cluster = Cluster.attach(name, store)
        assert all(process_state(n) in RUNNING for n in cluster.nodes)
        assert all(iptables.rules(n) == [] for n in cluster.nodes)
        assert Registry(store, name).load()["faults"] == []
        # brokers do not load the test-only hypothesis that kio would register with
        assert not any((Path(n.root) / ".hypothesis").exists() for n in cluster.nodes)

        # Next start of the same cluster cleans the old one up first.
        tag = cluster.state["tag"]
        again = Cluster.up(ClusterSpec(name=name, nodes=3), store)
        assert again.state["tag"] == tag and len(again.status()) == 3
    finally:
        down = jepka("down", "--name", name, "--store", store)
    assert down.returncode == 0, down.stderr
    assert not Registry(store, name).path.exists()
    assert leftovers(tag) == []


def test_status_says_when_there_are_no_clusters(tmp_path: Path) -> None:
    plain = jepka("status", "--store", str(tmp_path))
    assert plain.returncode == 0 and plain.stdout == "no registered clusters\n"
    listed = jepka("status", "--json", "--store", str(tmp_path))
    assert listed.returncode == 0 and json.loads(listed.stdout) == []


def test_cluster_cli_bad_input_exits_254(tmp_path: Path) -> None:
    bad = jepka("status", "--name", "nosuch", "--store", str(tmp_path))
    assert bad.returncode == 254 and "no cluster named 'nosuch'" in bad.stderr
    spec = tmp_path / "spec.yml"
    spec.write_text("backend: ssh\n")
    bad = jepka("up", "--spec", str(spec), "--store", str(tmp_path))
    assert bad.returncode == 254 and "needs hosts" in bad.stderr
    spec.write_text("- not a mapping\n")
    bad = jepka("up", "--spec", str(spec), "--store", str(tmp_path))
    assert bad.returncode == 254 and "expected a mapping" in bad.stderr
    (tmp_path / ".faults").mkdir()
    (tmp_path / ".faults" / "junk.json").write_text("{not json")
    bad = jepka("heal", "--name", "junk", "--store", str(tmp_path))
    assert bad.returncode == 254 and "unreadable leftover registry" in bad.stderr


OWNER = """
import sys, time
from harness.cluster import Cluster, ClusterSpec
from nemesis.package import build
cluster = Cluster.up(ClusterSpec(name=sys.argv[1], nodes=2), sys.argv[2])
with cluster.nemesis_context() as ctx:
    build("partition", seed=1).nemesis.invoke(
        ctx, {"process": "nemesis", "f": "start-partition", "value": "one"})
print(cluster.state["tag"], flush=True)
time.sleep(300)
"""


def test_the_next_start_removes_what_a_killed_run_left(tmp_path: Path) -> None:
    reason = netns_available()
    if reason:
        pytest.skip(reason)
    store = str(tmp_path / "store")
    dead, fresh = f"k{uuid.uuid4().hex[:8]}", f"f{uuid.uuid4().hex[:8]}"
    proc = subprocess.Popen(
        [sys.executable, "-c", OWNER, dead, store], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        tag = proc.stdout.readline().strip()
        assert tag and leftovers(tag)
    finally:
        proc.kill()  # SIGKILL: no heal, no teardown
        proc.wait(30)
    assert Registry(store, dead).load() is not None
    cluster = Cluster.up(ClusterSpec(name=fresh, nodes=1), store)
    try:
        assert Registry(store, dead).load() is None
        assert leftovers(tag) == []
    finally:
        cluster.down()


@pytest.mark.spark
def test_jepka_test_uses_a_cluster_made_earlier_and_leaves_it_up_and_healed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, name = str(tmp_path / "store"), f"u{uuid.uuid4().hex[:6]}"
    up = jepka("up", "--name", name, "--nodes", "3", "--store", store)
    assert up.returncode == 0, up.stderr
    try:
        code = main(
            [
                "test",
                *("--use-cluster", name, "--store", store, "--workload", "queue"),
                *("--bug", "no-dedup"),  # the cluster's own settings win: it has no bug
                *("--nemesis", "partition", "--nemesis-interval", "2", "--time-limit", "6"),
                *("--rate", "30", "--concurrency", "3", "--key-count", "4", "--seed", "2"),
                *("--recovery-time", "1", "--final-time-limit", "30"),
            ]
        )
        out, err = capsys.readouterr()
        assert code == 0 and "valid: True" in out, out + err
        test = json.loads(((Path(store) / "latest").resolve() / "test.json").read_text())
        assert test["cluster"]["name"] == name and test["spec"]["replication_factor"] == 3
        assert test["spec"]["bug"] == [] and test["namespace"].startswith("jepka-")
        cluster = Cluster.attach(name, store)  # still registered, healed, answering
        assert all(row["broker"] == "running" for row in cluster.status())
        assert all(row["drop_rules"] == 0 for row in cluster.status())
        assert Registry(store, name).load()["faults"] == []
    finally:
        down = jepka("down", "--name", name, "--store", store)
    assert down.returncode == 0, down.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "harness", "test", "--use-cluster", name, "--store", store],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 254 and f"no cluster named {name!r}" in bad.stderr
