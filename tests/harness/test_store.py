"""The run directory: layout, latest links, and crash-safe history appends."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from harness.store import HistoryWriter, RunDir, safe_name
from history import read_flat
from tests.eventually import eventually

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_layout_and_latest_links(tmp_path: Path) -> None:
    a = RunDir.create(tmp_path, "queue-kill", NOW)
    b = RunDir.create(tmp_path, "queue-kill", NOW)
    assert a.path == tmp_path / "queue-kill" / "20260102T030405"
    assert b.path.name == "20260102T030405-2"
    assert (tmp_path / "latest").resolve() == b.path.resolve()
    assert (tmp_path / "queue-kill" / "latest").resolve() == b.path.resolve()
    a.save_test({"seed": 3})
    assert json.loads((a.path / "test.json").read_text()) == {"seed": 3}
    assert a.node_dir("n1").is_dir()


def test_safe_name() -> None:
    assert safe_name("txn-kill+pause") == "txn-kill+pause"
    assert safe_name("../x y") == "-x-y"
    assert safe_name("..") == "test"


def test_history_round_trips_and_converts_to_parquet(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "t", NOW)
    with run.history_writer() as w:
        w.append(
            {
                "index": 0,
                "time": 1,
                "type": "invoke",
                "process": 0,
                "f": "send",
                "value": [["send", 1, 5]],
            }
        )
        w.append(
            {
                "index": 1,
                "time": 2,
                "type": "ok",
                "process": 0,
                "f": "send",
                "value": [["send", 1, [0, 5]]],
            }
        )
        w.append(
            {
                "index": 2,
                "time": 3,
                "type": "invoke",
                "process": 1,
                "f": "poll",
                "value": [["poll"]],
            }
        )
        w.append(
            {
                "index": 3,
                "time": 4,
                "type": "ok",
                "process": 1,
                "f": "poll",
                "value": [["poll", {1: [[0, 5]]}]],
            }
        )
    assert '{"1":[[0,5]]}' in run.history_path.read_text()
    run.write_parquet()
    table = read_flat(run.path / "history.parquet")
    assert table.num_rows >= 2


def test_closed_writer_refuses(tmp_path: Path) -> None:
    w = HistoryWriter(tmp_path / "h.jsonl")
    w.close()
    with pytest.raises(ValueError, match="closed"):
        w.append({})


WRITER = """
import sys, time
import generator as g
from harness.interpreter import Interpreter
from harness.protocols import NoopClient, NoopNemesis
from harness.store import RunDir
run = RunDir.create(sys.argv[1], "killed")
w = run.history_writer()
class Slowish(NoopClient):
    def invoke(self, test, op):
        time.sleep(0.001)
        return {**op, "type": "ok", "value": [["send", 0, [op["index"], op["value"][0][2]]]]}
ops = g.on_clients(g.map_ops(lambda o: {**o, "value": [["send", 0, o["time"]]]},
                   g.repeat({"f": "send"})))
print("started", flush=True)
Interpreter({}, ops, client=Slowish(), nemesis=NoopNemesis(), concurrency=4,
            journal=w.append).run()
"""


@pytest.mark.integration
def test_a_run_killed_half_way_leaves_a_checkable_history(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path)],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).parents[2],
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"started"
        history = tmp_path / "killed" / "latest" / "history.jsonl"
        eventually(
            lambda: history.exists() and history.stat().st_size >= 20_000,
            30,
            interval=0.02,
            what="20 kB of history written",
        )
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert history.stat().st_size >= 20_000
    table = read_flat(history)
    assert table.num_rows > 100
