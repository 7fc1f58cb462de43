"""`jepka test --workload queue` on a replicated 3-node reference cluster (RF 3, min
ISR 2) under the mix of kills, pauses and partitions ends valid, for two fixed
seeds: leaders fail over, killed nodes restart (up even while another fault keeps
their quorum away), followers truncate by epoch and rejoin the ISR, and no
acknowledged write is lost, duplicated or reordered."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from control.backends.local import cluster_tag
from tests.harness.runs import LIVE_RUN, history_ops, run_replicated
from tests.nemesis.probes import leftovers

# marked acceptance as the matrix's live runs; their recorded histories are in make test
pytestmark = [*LIVE_RUN, pytest.mark.acceptance]
FAULTS = {"kill", "pause", "start-partition"}


def test_queue_under_kill_pause_and_partition_on_a_replicated_cluster_is_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, store = run_replicated(
        tmp_path,
        capsys,
        *("--workload", "queue", "--nemesis", "kill,pause,partition"),
        *("--nemesis-interval", "3", "--time-limit", "15", "--rate", "40"),
        *("--concurrency", "4", "--key-count", "4", "--recovery-time", "3"),
        *("--final-time-limit", "30", "--seed", "1", "--test-count", "2"),
    )
    runs = sorted(p for p in store.glob("queue-*/2*") if p.is_dir())
    assert len(runs) == 2, runs
    faults_seen: set[str] = set()
    for run in runs:
        assert json.loads((run / "results.json").read_text())["valid"] is True, run
        ops = history_ops(run)
        faults_seen |= {
            o["f"] for o in ops if o["process"] == "nemesis" and o["type"] != "invoke"
        } & FAULTS
        assert sum(o["type"] == "ok" and o["f"] == "send" for o in ops) > 10, run
        assert sum(o["type"] == "ok" and o["f"] == "poll" for o in ops) > 10, run
    assert faults_seen == FAULTS, f"the two seeds did not exercise every fault: {faults_seen}"
    assert not leftovers(cluster_tag(f"jt{os.getpid()}"))
