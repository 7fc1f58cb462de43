"""Broker-side ground truth from node logs: leader and ISR changes, elections.

The harness copies each broker's logs to ``nodes/<node>/`` after a run. The
checker never reads them (a Jepsen verdict rests on what clients observed),
so the report shows them in a section of their own, marked as not used for
the verdict, to help a reader connect an anomaly to what the cluster did.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

MAX_EVENTS = 500
MAX_FILE_BYTES = 64 * 1024 * 1024  # read at most this much of one log
EVENT = re.compile(
    r"leader|\bisr\b|elect|epoch|shrink|expand|become|resign|controller|fenc", re.IGNORECASE
)
CLASSES = (
    ("election", re.compile(r"elect|vote|candidate|resign", re.I)),
    ("isr", re.compile(r"\bisr\b|shrink|expand", re.I)),
    ("leader", re.compile(r"leader|become|epoch", re.I)),
)
LOG_SUFFIXES = frozenset({".log", ".stdout", ".stderr", ".out", ".err", ".txt"})
SEGMENT = re.compile(r"^\d{20}\.log$")
TIMESTAMP = re.compile(r"^\[?(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?)")


def _is_text_log(path: Path) -> bool:
    """Broker logs (``*.log``, ``*.stdout``, ...), not Kafka log segments, which are
    also called ``*.log`` but are binary and named by their base offset."""
    if not path.is_file() or path.suffix not in LOG_SUFFIXES or SEGMENT.match(path.name):
        return False
    with path.open("rb") as f:
        return b"\0" not in f.read(4096)


def node_events(run_dir: Path) -> dict[str, Any]:
    """Matching log lines per node, in file order, at most ``MAX_EVENTS`` in all."""
    root = run_dir / "nodes"
    if not root.is_dir():
        return {"present": False, "nodes": [], "events": [], "truncated": False}
    nodes = sorted(p.name for p in root.iterdir() if p.is_dir())
    events: list[dict[str, Any]] = []
    truncated = False
    for node in nodes:
        for log in sorted(p for p in (root / node).rglob("*") if _is_text_log(p)):
            with log.open(errors="replace") as f:
                read = 0
                for lineno, line in enumerate(f, 1):
                    read += len(line)
                    if read > MAX_FILE_BYTES:
                        break
                    if not EVENT.search(line):
                        continue
                    if len(events) >= MAX_EVENTS:
                        truncated = True
                        break
                    stamp = TIMESTAMP.match(line)
                    events.append(
                        {
                            "node": node,
                            "file": str(log.relative_to(run_dir)),
                            "line": lineno,
                            "time": stamp.group(1) if stamp else None,
                            "class": next((c for c, rx in CLASSES if rx.search(line)), "other"),
                            "text": line.strip()[:300],
                        }
                    )
    return {"present": True, "nodes": nodes, "events": events, "truncated": truncated}
