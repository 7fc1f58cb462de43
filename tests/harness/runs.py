"""``jepka test`` on a replicated 3-node netns cluster, as the end-to-end tests run it,
and reading back what a run recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.nemesis.probes import netns_available

#: what a live `jepka test` on a cluster of network namespaces is marked
LIVE_RUN = [
    pytest.mark.slow,
    pytest.mark.integration,
    pytest.mark.broker,
    pytest.mark.spark,
    pytest.mark.netns,
]
REPLICATED = ("--nodes", "3", "--replication-factor", "3", "--min-isr", "2")


def run_replicated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *flags: str
) -> tuple[str, Path]:
    """Runs ``jepka test`` with ``flags`` (skipped without network namespaces),
    asserts it exited 0; returns its stdout and the store."""
    reason = netns_available()
    if reason:
        pytest.skip(reason)
    store = tmp_path / "store"
    code = main(["test", *REPLICATED, *flags, "--store", str(store)])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    return out, store


def history_ops(run: Path) -> list[dict[str, Any]]:
    """The ops of a run directory's ``history.jsonl``, in order."""
    return [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
