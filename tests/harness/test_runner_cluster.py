"""`jepka test` on a replicated 3-node reference cluster: the nodes form one
combined-mode cluster, topics run at RF 3 / min ISR 2, partitions cut the
cluster while the clients run, and the run still ends valid."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.backends.local import cluster_tag
from harness.cli import main
from tests.nemesis.probes import leftovers, netns_available


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.broker
@pytest.mark.spark
@pytest.mark.netns
def test_queue_under_partitions_on_a_replicated_cluster_is_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reason = netns_available()
    if reason:
        pytest.skip(reason)
    store = tmp_path / "store"
    code = main(
        [
            "test",
            *("--nodes", "3", "--replication-factor", "3", "--min-isr", "2"),
            *("--workload", "queue", "--nemesis", "partition", "--nemesis-interval", "3"),
            *("--time-limit", "12", "--rate", "40", "--concurrency", "4", "--seed", "1"),
            *("--recovery-time", "2", "--final-time-limit", "30", "--key-count", "4"),
            *("--store", str(store)),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "valid: True" in out
    run = (store / "latest").resolve()
    test = json.loads((run / "test.json").read_text())
    assert test["nodes"] == ["n1", "n2", "n3"] and len(test["bootstrap"].split(",")) == 3

    ops = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
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
