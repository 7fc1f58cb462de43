"""Known histories and hand-derived results for the report tests.

Each history is small enough to reason about by eye, and its results object
lists exactly the anomalies that history contains, with op indices a reader
can verify: the report must show those and nothing it invented.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

MS = 1_000_000


class HistoryBuilder:
    """Appends ops with increasing index and time (1 ms apart unless told)."""

    def __init__(self) -> None:
        self.ops: list[dict[str, Any]] = []
        self.time = 0

    def op(
        self,
        process: int | str,
        type_: str,
        f: str,
        value: Any = None,
        dt_ms: float = 1,
        **extra: Any,
    ) -> int:
        self.time += int(dt_ms * MS)
        index = len(self.ops)
        self.ops.append(
            {
                "index": index,
                "time": self.time,
                "type": type_,
                "process": process,
                "f": f,
                "value": value,
                **extra,
            }
        )
        return index

    def write(self, path: Path) -> None:
        path.write_text("".join(json.dumps(o) + "\n" for o in self.ops))


def queue_history(lose: bool) -> tuple[HistoryBuilder, dict[str, int]]:
    """Process 0 sends values 1..6 to key 0 (offsets 0..5); process 1 polls them.
    With ``lose``, value 3 (offset 2) is acknowledged but the poll skips it, and
    two txns form a real-time cycle. Returns the builder and notable op indices."""
    h = HistoryBuilder()
    marks: dict[str, int] = {}
    h.op("nemesis", "invoke", "start-partition", "majority")
    marks["partition"] = h.op("nemesis", "info", "start-partition", {"n1": ["n2", "n3"]})
    for v in range(1, 7):
        marks[f"send-invoke-{v}"] = h.op(0, "invoke", "send", [["send", 0, v]])
        marks[f"send-{v}"] = h.op(0, "ok", "send", [["send", 0, [v - 1, v]]], dt_ms=3 + v)
    h.op("nemesis", "invoke", "stop-partition")
    h.op("nemesis", "info", "stop-partition")
    read = [[o, v] for o, v in enumerate(range(1, 7), 0) if not (lose and v == 3)]
    marks["poll-invoke"] = h.op(1, "invoke", "poll", [["poll"]])
    marks["poll"] = h.op(1, "ok", "poll", [["poll", {"0": read}]], dt_ms=5)
    h.op(2, "invoke", "send", [["send", 1, 100]])
    marks["info"] = h.op(2, "info", "send", [["send", 1, 100]], error="timeout")
    marks["txn-a-invoke"] = h.op(3, "invoke", "txn", [["send", 2, 7], ["poll"]])
    marks["txn-a"] = h.op(3, "ok", "txn", [["send", 2, [0, 7]], ["poll", {"3": [[0, 8]]}]])
    marks["txn-b-invoke"] = h.op(4, "invoke", "txn", [["send", 3, 8], ["poll"]], dt_ms=2)
    marks["txn-b"] = h.op(4, "ok", "txn", [["send", 3, [0, 8]], ["poll", {"2": [[0, 7]]}]])
    h.op(5, "invoke", "poll", [["poll"]])  # never completes: pending
    return h, marks


def queue_results(lose: bool, marks: dict[str, int]) -> dict[str, Any]:
    """The checker's verdict on :func:`queue_history`, derived by hand."""
    if not lose:
        return {
            "valid": True,
            "anomalies": {},
            "allowed": ["G0", "int-send-skip"],
            "stats": {
                "ops": 34,
                "unseen": [
                    {"time": 0, "unseen": {"0": 0}},
                    {"time": 50 * MS, "unseen": {"0": 2}},
                    {"time": 90 * MS, "unseen": {"0": 0}},
                ],
            },
            "timings": {"total": 1.5},
        }
    return {
        "valid": False,
        "anomalies": {
            "lost-write": [
                {
                    "key": 0,
                    "value": 3,
                    "offset": 2,
                    "writer": marks["send-3"],
                    "max-read": marks["poll"],
                    "explanation": f"op {marks['send-3']} sent 3 to key 0 at offset 2 "
                    "and it was acknowledged, but no poll ever read "
                    f"it, though op {marks['poll']} read offset 5",
                }
            ],
            "G1c-realtime": [
                {
                    "cycle": [marks["txn-a"], marks["txn-b"]],
                    "steps": [
                        {"type": "wr", "key": 3, "explanation": "txn A read 8 from txn B"},
                        {"type": "realtime", "explanation": "A completed before B began"},
                    ],
                    "explanation": "txn A read key 3's value 8, which txn B wrote, but A "
                    "completed before B began",
                }
            ],
            "G0": [
                {
                    "cycle": [marks["txn-a"], marks["txn-b"]],
                    "steps": [{"type": "ww", "key": 2}, {"type": "ww", "key": 3}],
                    "explanation": "a write cycle between the two txns",
                }
            ],
        },
        "allowed": ["G0", "int-send-skip"],
        "stats": {"ops": 34},
        "timings": {"total": 2.0, "lost-write": 0.25},
    }


@pytest.fixture
def make_run(tmp_path: Path) -> Callable[..., Path]:
    """``make_run(lose, nodes=False, name=...)``: a run folder in a temporary store."""

    def make(
        lose: bool, nodes: bool = False, name: str = "queue", stamp: str = "20260101T000000"
    ) -> Path:
        run = tmp_path / "store" / name / stamp
        run.mkdir(parents=True)
        h, marks = queue_history(lose)
        h.write(run / "history.jsonl")
        (run / "results.json").write_text(json.dumps(queue_results(lose, marks)))
        (run / "test.json").write_text(
            json.dumps(
                {
                    "name": name,
                    "workload": "queue",
                    "nemesis": ["partition"],
                    "seed": 7,
                    "key_map": {
                        "0": "jepka-0/0",
                        "1": "jepka-0/1",
                        "2": "jepka-1/0",
                        "3": "jepka-1/1",
                    },
                }
            )
        )
        if nodes:
            log = run / "nodes" / "n1" / "broker.log"
            log.parent.mkdir(parents=True)
            log.write_text(
                "[2026-01-01 00:00:01,000] INFO started\n"
                "[2026-01-01 00:00:02,000] INFO partition jepka-0/0: became leader "
                "at epoch 3\n"
                "[2026-01-01 00:00:03,000] INFO ISR shrink for jepka-0/0 to [1]\n"
            )
        return run

    return make
