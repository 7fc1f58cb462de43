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


def test_nodes_merge_in_time_order_each_line_once(tmp_path: Path) -> None:
    from datetime import datetime

    started = datetime(2026, 1, 1, 10, 0, 0).timestamp()
    n1, n2 = tmp_path / "nodes" / "n1", tmp_path / "nodes" / "n2"
    n1.mkdir(parents=True)
    n2.mkdir(parents=True)
    (n1 / "broker.log").write_text(
        "2026-01-01 10:00:05,250 INFO broker.raft: leader of epoch 2\n"
        "2026-01-01 10:00:09,000 INFO broker.raft: leader of epoch 2\n"
    )
    (n1 / "broker.stdout").write_text(  # the same lines again, without times
        "INFO:broker.raft:leader of epoch 2\nINFO:broker.raft:leader of epoch 2\n"
        "INFO:broker.raft:leader of epoch 3\n"
    )
    (n2 / "broker.log").write_text("2026-01-01 10:00:07,000 INFO broker.isr: ISR shrink t-0 to [2]")
    got = node_events(tmp_path, started)
    assert [(e["node"], e["at"], e["text"][-17:]) for e in got["events"]] == [
        ("n1", 5.25, "leader of epoch 2"),
        ("n2", 7.0, "shrink t-0 to [2]"),
        ("n1", 9.0, "leader of epoch 2"),
        ("n1", None, "leader of epoch 3"),  # only in broker.stdout
    ]


def test_the_cap_takes_nodes_in_turn_and_internal_topics_last(tmp_path: Path) -> None:
    for node, lines in (
        ("n1", [f"became leader of t-{i}" for i in range(MAX_EVENTS)]),
        ("n2", ["ISR shrink __consumer_offsets-3 to [2]"] * 50 + ["became leader of t-9"]),
    ):
        d = tmp_path / "nodes" / node
        d.mkdir(parents=True)
        (d / "broker.log").write_text("\n".join(lines) + "\n")
    got = node_events(tmp_path)
    by_node = {n: [e for e in got["events"] if e["node"] == n] for n in ("n1", "n2")}
    assert got["truncated"] and len(got["events"]) == MAX_EVENTS
    assert [e["internal"] for e in by_node["n2"]] == [False]  # n2's own partition, not 50 internal
    assert len(by_node["n1"]) == MAX_EVENTS - 1


def test_partition_labels() -> None:
    assert _partition_label(["jepka-t0", 1]) == "jepka-t0/1"
    assert _partition_label({"topic": "t", "partition": 2}) == "t/2"
    assert _partition_label("t-3") == "t-3"
