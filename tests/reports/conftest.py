"""Known histories and hand-derived results for the report tests.

Each history is small enough to reason about by eye; its results are the
real checker's, which list exactly the anomalies planted in it (checked by
hand: see :func:`queue_history`). The report must show those and nothing it
invented.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

MS = 1_000_000
DATA = Path(__file__).parent / "data"


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
    """Process 0 sends values 1..6 to key 0 (offsets 0..5); process 1 polls them;
    txns C and D form a G0 write cycle (allowed). With ``lose``, value 3 (offset
    2) is acknowledged but the poll skips it (lost-write, unseen, int-poll-skip)
    and txn A reads what txn B sends although A completes before B begins
    (G1c-realtime). Returns the builder and notable op indices."""
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
    # txn A reads the 8 that txn B sends, yet A completes before B begins
    marks["txn-a-invoke"] = h.op(3, "invoke", "txn", [["send", 2, 7], ["poll"]])
    seen = {"3": [[0, 8]]} if lose else {}
    marks["txn-a"] = h.op(3, "ok", "txn", [["send", 2, [0, 7]], ["poll", seen]])
    marks["txn-b-invoke"] = h.op(4, "invoke", "txn", [["send", 3, 8]], dt_ms=2)
    marks["txn-b"] = h.op(4, "ok", "txn", [["send", 3, [0, 8]]])
    # txns C and D write keys 4 and 5 in opposite orders: a G0 write cycle
    h.op(6, "invoke", "txn", [["send", 4, 20], ["send", 5, 21]])
    h.op(7, "invoke", "txn", [["send", 4, 22], ["send", 5, 23]])
    marks["txn-c"] = h.op(6, "ok", "txn", [["send", 4, [0, 20]], ["send", 5, [1, 21]]])
    marks["txn-d"] = h.op(7, "ok", "txn", [["send", 4, [1, 22]], ["send", 5, [0, 23]]])
    h.op(8, "invoke", "poll", [["poll"]])
    h.op(
        8,
        "ok",
        "poll",
        [
            [
                "poll",
                {"2": [[0, 7]], "3": [[0, 8]], "4": [[0, 20], [1, 22]], "5": [[0, 23], [1, 21]]},
            ]
        ],
    )
    h.op(5, "invoke", "poll", [["poll"]])  # never completes: pending
    return h, marks


def queue_results(lose: bool) -> dict[str, Any]:
    """The real checker's result for :func:`queue_history` (``checkers.check`` on
    it, stored: the Spark checker takes minutes on a loaded machine). Rewrite
    them with :func:`regenerate` when the result format changes."""
    return json.loads((DATA / f"queue-{'invalid' if lose else 'valid'}.results.json").read_text())


def regenerate() -> None:
    """``.venv/bin/python -c 'from tests.reports.conftest import regenerate; regenerate()'``"""
    import tempfile

    from checkers import check

    with tempfile.TemporaryDirectory() as tmp:
        for lose in (False, True):
            path = Path(tmp) / "history.jsonl"
            queue_history(lose)[0].write(path)
            out = DATA / f"queue-{'invalid' if lose else 'valid'}.results.json"
            out.write_text(json.dumps(check(str(path)), indent=1) + "\n")


@pytest.fixture
def make_run(tmp_path: Path) -> Callable[..., Path]:
    """``make_run(lose, nodes=False, name=...)``: a run folder in a temporary store."""

    def make(
        lose: bool, nodes: bool = False, name: str = "queue", stamp: str = "20260101T000000"
    ) -> Path:
        run = tmp_path / "store" / name / stamp
        run.mkdir(parents=True)
        queue_history(lose)[0].write(run / "history.jsonl")
        (run / "results.json").write_text(json.dumps(queue_results(lose)))
        (run / "test.json").write_text(
            json.dumps(
                {
                    "name": name,
                    "spec": {
                        "workload": "queue",
                        "nemesis": ["partition"],
                        "bug": ["early-ack"],
                        "seed": 7,
                        "time_limit": 30.0,
                        "rate": 100.0,
                        "acks": "all",
                    },
                    "seed": 7,
                    "command": "jepka test --nemesis partition --bug early-ack --seed 7",
                    "versions": {"jepka": "0.1.0", "librdkafka": "2.16.0"},
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
