"""`jepka test --workload txn` on a replicated 3-node reference cluster (RF 3, min ISR
2) under partitions and under SIGKILLs ends valid: transactions span partitions led by
every node, so their markers cross the network, coordinators fail over, and producer
ids come from the controller's blocks (no two nodes share one)."""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path

import pytest

from control.backends.local import cluster_tag
from tests.harness.runs import LIVE_RUN, history_ops, run_replicated
from tests.nemesis.probes import leftovers

pytestmark = LIVE_RUN

BLOCK = re.compile(r"producer id block \[(\d+), (\d+)\)")


@pytest.mark.parametrize(
    ("nemesis", "fault"),
    [
        # make test keeps the kill run (coordinators fail over, producer-id
        # blocks move); the partition run is the matrix's, in make acceptance
        pytest.param("partition", "start-partition", marks=pytest.mark.acceptance),
        ("kill", "kill"),
    ],
)
def test_txn_on_a_replicated_cluster_is_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], nemesis: str, fault: str
) -> None:
    out, store = run_replicated(
        tmp_path,
        capsys,
        # a SIGKILLed node's partitions move only when its 9 s broker session
        # expires, so faults 8 s apart leave healthy time for commits between them
        *("--workload", "txn", "--nemesis", nemesis, "--nemesis-interval", "8"),
        *("--time-limit", "30", "--rate", "40", "--concurrency", "4", "--seed", "1"),
        *("--recovery-time", "3", "--final-time-limit", "40", "--key-count", "4"),
    )
    assert "valid: True" in out
    run = (store / "latest").resolve()

    ops = history_ops(run)
    faults = [o for o in ops if o["process"] == "nemesis" and o["f"] == fault]
    assert faults, f"no {fault} in the history"
    committed = [o["time"] for o in ops if o["f"] == "txn" and o["type"] == "ok"]
    assert any(t > faults[0]["time"] for t in committed), "no transaction committed after a fault"

    # Producer ids from the controller: every block granted once, across all nodes.
    blocks = []
    for name in ("n1", "n2", "n3"):
        blocks += BLOCK.findall((run / "nodes" / name / "broker.log").read_text())
    spans = sorted((int(a), int(b)) for a, b in blocks)
    assert spans, "no producer-id block was granted"
    assert all(end <= start for (_, end), (start, _) in itertools.pairwise(spans))
    assert not leftovers(cluster_tag(f"jt{os.getpid()}"))
