"""``jepka test --db kafka --kafka-home DIR`` end to end: the Kafka adapter
writes server.properties, formats the storage with kafka-storage.sh and
starts kafka-server-start.sh on each node of a local cluster, here a
stand-in installation of Kafka 3.7 or 4.0 whose scripts run the reference
broker on Kafka's own arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from tests.control.db.standin_kafka import make_kafka_home
from tests.harness.runs import LIVE_RUN

pytestmark = LIVE_RUN


@pytest.mark.parametrize(
    ("version", "quorum"),
    [
        # the static quorum live in `make acceptance`; test_kafka_versions.py
        # checks what the adapter writes for it on every run
        pytest.param("3.7.0", "controller.quorum.voters=", marks=pytest.mark.acceptance),
        ("4.0.0", "controller.quorum.bootstrap.servers="),
    ],
)
def test_a_kafka_installation_runs_a_test_under_kills(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], version: str, quorum: str
) -> None:
    home = make_kafka_home(tmp_path, version)
    store = tmp_path / "store"
    code = main(
        [
            "test",
            *("--db", "kafka", "--kafka-home", str(home), "--workload", "queue"),
            *("--nemesis", "kill", "--nemesis-interval", "3", "--time-limit", "10"),
            *("--rate", "30", "--concurrency", "3", "--key-count", "4", "--seed", "3"),
            *("--recovery-time", "2", "--final-time-limit", "40", "--store", str(store)),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0 and "valid: True" in out, out + err
    run = (store / "latest").resolve()
    test = json.loads((run / "test.json").read_text())
    assert test["cluster"]["db"] == "kafka" and len(test["nodes"]) == 3
    history = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    killed = [o for o in history if o.get("f") == "kill" and o["type"] == "info"]
    assert killed, "the nemesis killed no broker"
    node = store / "clusters"  # the adapter's files on the nodes (kept after the run)
    meta = sorted(node.rglob("meta.properties"))
    assert len(meta) == 3 and "cluster.id=" in meta[0].read_text()
    server = sorted(node.rglob("server.properties"))[0].read_text()
    assert "process.roles=broker,controller" in server and quorum in server
