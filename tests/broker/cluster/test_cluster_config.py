"""The voter list and the cluster options of ``jepka broker``: bad input exits 254
with one line naming what is wrong."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from broker.config import ConfigError
from broker.replication.voters import Voter, parse_voters


def test_parse_voters() -> None:
    assert parse_voters("1@127.0.0.1:9093, 2@[::1]:9094") == {
        1: Voter(1, "127.0.0.1", 9093),
        2: Voter(2, "::1", 9094),
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1@host", "expected ID@HOST:PORT"),
        ("x@host:1", "expected ID@HOST:PORT"),
        ("1@host:0", "must be in 1..65535"),
        ("1@a:1,1@b:2", "node 1 listed twice"),
        ("", "expected ID@HOST:PORT"),
    ],
)
def test_bad_voters(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_voters(text)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--voters", "1@127.0.0.1"], "--voters: expected ID@HOST:PORT"),
        (["--voters", "2@127.0.0.1:9"], "node 1 is not among [2]"),
        (["--voters", "1@127.0.0.1:9", "--listen", "127.0.0.1:0"], "needs a fixed port"),
        (["--bug", "early-ack", "--bug", "nope"], "--bug: unknown bug 'nope'"),
        (["--set", "process.roles=controller"], "needs the controller quorum"),
        (["--set", "process.roles=broker,zookeeper"], "expected broker, controller or"),
        (
            ["--set", "process.roles=broker", "--voters", "1@127.0.0.1:9"],
            "node 1 has process.roles=broker, so it is no voter",
        ),
        (
            ["--set", "process.roles=controller", "--voters", "2@127.0.0.1:9"],
            "node 1 is not among [2]",
        ),
    ],
)
def test_cli_refuses_bad_cluster_options(tmp_path: Path, args: list[str], message: str) -> None:
    argv = [sys.executable, "-m", "broker", "--node-id", "1", "--data-dir", str(tmp_path)]
    if "--listen" not in args:
        argv += ["--listen", "127.0.0.1:1"]
    proc = subprocess.run(argv + args, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 254
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]


def test_broker_only_nodes_size_the_internal_topics_to_the_brokers(tmp_path: Path) -> None:
    """Kafka's defaults (replication factor 3, min ISR 2) would leave a cluster
    of fewer brokers creating its internal topics for ever; a setting given
    still wins."""
    from broker.replication.local_cluster import LocalCluster

    cluster = LocalCluster(
        tmp_path, size=1, controllers=1, settings=["transaction.state.log.min.isr=1"]
    )
    broker = cluster.nodes[1].settings
    assert "offsets.topic.replication.factor=1" in broker
    assert broker.index("transaction.state.log.min.isr=1") > broker.index("process.roles=broker")
    assert not any("replication.factor" in s for s in cluster.nodes[2].settings)
