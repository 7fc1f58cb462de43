from __future__ import annotations

from pathlib import Path

from reports.cycles import _partition_label
from reports.nodes import MAX_EVENTS, node_events


def test_node_events_read_text_logs_only(tmp_path: Path) -> None:
    n1, n2 = tmp_path / "nodes" / "n1", tmp_path / "nodes" / "n2" / "data" / "t-0"
    n1.mkdir(parents=True)
    n2.mkdir(parents=True)
    (n1 / "broker.stdout").write_text(
        "INFO:broker:partition t-0 leader epoch 4\nnoise\nINFO:raft:election won by 2 in term 3\n"
    )
    (n1 / "server.log").write_text("[2026-01-01 10:00:00,5] ISR shrink t-0 to [1]\n")
    (n2 / "00000000000000000000.log").write_text("leader leader leader\n")  # a segment
    (n2.parent / "blob.log").write_bytes(b"leader\0\1\2")  # binary
    got = node_events(tmp_path)
    assert got["present"] and got["nodes"] == ["n1", "n2"] and not got["truncated"]
    assert [(e["file"], e["line"], e["class"]) for e in got["events"]] == [
        ("nodes/n1/broker.stdout", 1, "leader"),
        ("nodes/n1/broker.stdout", 3, "election"),
        ("nodes/n1/server.log", 1, "isr"),
    ]
    assert got["events"][2]["time"] == "2026-01-01 10:00:00,5"


def test_node_events_are_capped(tmp_path: Path) -> None:
    d = tmp_path / "nodes" / "n1"
    d.mkdir(parents=True)
    (d / "b.log").write_text("became leader\n" * (MAX_EVENTS + 10))
    got = node_events(tmp_path)
    assert len(got["events"]) == MAX_EVENTS and got["truncated"]
    assert node_events(tmp_path / "none") == {
        "present": False,
        "nodes": [],
        "events": [],
        "truncated": False,
    }


def test_partition_labels() -> None:
    assert _partition_label(["jepka-t0", 1]) == "jepka-t0/1"
    assert _partition_label({"topic": "t", "partition": 2}) == "t/2"
    assert _partition_label("t-3") == "t-3"
