"""Broker-side ground truth from node logs: leader and ISR changes, elections.

The harness copies each broker's logs to ``nodes/<node>/`` after a run. The
checker never reads them (a Jepsen verdict rests on what clients observed),
so the report shows them in a section of their own, marked as not used for
the verdict, to help a reader connect an anomaly to what the cluster did:
merged across nodes in time order, in the report's seconds.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime
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
#: a level and logger before the message: ``INFO broker.x:`` or ``INFO:broker.x:``
PREFIX = re.compile(r"^(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|TRACE)[: ]\s*[\w.$-]*:\s*")
INTERNAL = re.compile(r"\b__\w+")


def _is_text_log(path: Path) -> bool:
    """Broker logs (``*.log``, ``*.stdout``, ...), not Kafka log segments, which are
    also called ``*.log`` but are binary and named by their base offset."""
    if not path.is_file() or path.suffix not in LOG_SUFFIXES or SEGMENT.match(path.name):
        return False
    with path.open("rb") as f:
        return b"\0" not in f.read(4096)


def _message(line: str) -> str:
    """A log line without its timestamp, level and logger: the same event
    written to two files (``broker.log`` and ``broker.stdout``) compares equal."""
    text = TIMESTAMP.sub("", line.strip()).lstrip("] ")
    return PREFIX.sub("", text)


def _seconds(stamp: str | None, started_at: float | None) -> float | None:
    """A log timestamp (the broker's local time) as seconds into the run."""
    if stamp is None or started_at is None:
        return None
    try:
        wall = datetime.strptime(stamp.replace("T", " ").replace(",", "."), "%Y-%m-%d %H:%M:%S.%f")
    except ValueError:
        try:
            wall = datetime.strptime(stamp.replace("T", " "), "%Y-%m-%d %H:%M:%S")
        except ValueError:
            return None
    return round(wall.timestamp() - started_at, 3)


def _node_lines(run_dir: Path, node_dir: Path, started_at: float | None) -> list[dict[str, Any]]:
    """One node's event lines, each once however many of its files hold it."""
    seen: Counter[str] = Counter()
    out: list[dict[str, Any]] = []
    for log in sorted(p for p in node_dir.rglob("*") if _is_text_log(p)):
        here: Counter[str] = Counter()
        with log.open(errors="replace") as f:
            read = 0
            for lineno, line in enumerate(f, 1):
                read += len(line)
                if read > MAX_FILE_BYTES:
                    break
                if not EVENT.search(line):
                    continue
                message = _message(line)
                here[message] += 1
                if here[message] <= seen[message]:
                    continue  # an earlier file of the node has it
                stamp = TIMESTAMP.match(line)
                out.append(
                    {
                        "node": node_dir.name,
                        "file": str(log.relative_to(run_dir)),
                        "line": lineno,
                        "time": stamp.group(1) if stamp else None,
                        "at": _seconds(stamp.group(1) if stamp else None, started_at),
                        "class": next((c for c, rx in CLASSES if rx.search(line)), "other"),
                        "internal": bool(INTERNAL.search(line)),
                        "text": line.strip()[:300],
                    }
                )
        seen |= here
    return out


def node_events(run_dir: Path, started_at: float | None = None) -> dict[str, Any]:
    """Every node's event lines merged in time order (seconds into the run,
    ``at``, when ``started_at`` gives the wall clock of the run's start), at
    most ``MAX_EVENTS``: taken from the nodes in turn, lines about internal
    topics last, so neither one node nor ``__consumer_offsets`` fills them."""
    root = run_dir / "nodes"
    if not root.is_dir():
        return {"present": False, "nodes": [], "events": [], "truncated": False}
    nodes = sorted(p.name for p in root.iterdir() if p.is_dir())
    ranked = []
    for node in nodes:
        lines = _node_lines(run_dir, root / node, started_at)
        for internal in (False, True):
            mine = [e for e in lines if e["internal"] == internal]
            ranked += [((internal, rank), e) for rank, e in enumerate(mine)]
    ranked.sort(key=lambda x: x[0])
    events = [e for _, e in ranked[:MAX_EVENTS]]
    events.sort(key=lambda e: (e["at"] is None, e["at"] or 0, e["node"], e["file"], e["line"]))
    return {
        "present": True,
        "nodes": nodes,
        "events": events,
        "truncated": len(ranked) > MAX_EVENTS,
    }
