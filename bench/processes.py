"""CPU time of processes, from /proc: the brokers' work apart from the
clients' and the checker's.

Imported by the ``bench_*.py`` scripts (run as files, so this directory is on
their path); not a benchmark itself, hence not named ``bench_*``.
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

#: what each process of a ``jepka test`` run's tree is there for
ROLES = ("brokers", "run", "checker")


def cpu_seconds(*pids: int) -> float:
    """User and system CPU seconds of ``pids`` together so far; OSError once
    one is gone."""
    return sum(_ticks(pid) for pid in pids) / os.sysconf("SC_CLK_TCK")


def _ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return children


def tree(pid: int) -> list[int]:
    """``pid`` and all its descendants, from /proc."""
    return list(roles(pid, []))


def broker_pids(store: Path) -> list[int]:
    """The pids in the broker pidfiles of ``store``'s local clusters (a local
    broker is a daemon: its parent is init, not the run that started it)."""
    pids = []
    for pidfile in store.glob("clusters/*/*/broker.pid"):
        try:
            pids.append(int(pidfile.read_text().split()[0]))
        except (OSError, IndexError, ValueError):
            continue
    return pids


def roles(run: int, brokers: list[int]) -> dict[int, str]:
    """The processes of ``run``'s tree and of the ``brokers``' trees, each
    with its role: ``brokers``, ``checker`` (Spark's JVM, which the run
    starts, and its Python workers) or ``run`` (the rest: the harness and
    its clients)."""
    children = _children()
    found: dict[int, str] = {}
    todo = [(run, "run"), *((b, "brokers") for b in brokers)]
    while todo:
        p, role = todo.pop()
        if p in found:
            continue
        if role == "run":
            try:
                java = Path(f"/proc/{p}/exe").resolve().name == "java"
            except OSError:
                java = False
            role = "checker" if java else role
        found[p] = role
        todo.extend((c, role) for c in children.get(p, []))
    return found


class RoleSampler:
    """Samples the CPU seconds of each role of a run's processes (see
    :func:`roles`) every ``period_s`` on a thread of its own, until
    :meth:`stop`; :meth:`between` then gives each role's CPU seconds between
    two wall times. What a process uses between its last sample and its end
    (a broker killed, a worker done) is not counted."""

    def __init__(self, run: int, brokers: Callable[[], list[int]], period_s: float = 0.5) -> None:
        self._run_pid, self._brokers, self._period = run, brokers, period_s
        self._times: list[float] = []
        self._totals: list[dict[str, float]] = []
        self._last: dict[int, tuple[str, float]] = {}  # a finished process keeps its last
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.is_set():
            now = time.time()
            for p, role in roles(self._run_pid, self._brokers()).items():
                try:
                    self._last[p] = (role, cpu_seconds(p))
                except (OSError, IndexError, ValueError):
                    continue
            totals = dict.fromkeys(ROLES, 0.0)
            for role, seconds in self._last.values():
                totals[role] += seconds
            self._times.append(now)
            self._totals.append(totals)
            self._done.wait(self._period)

    def stop(self) -> None:
        self._done.set()
        self._thread.join()

    def _window(self, start: float, end: float) -> tuple[int, int] | None:
        """The first sample at or after ``start`` and the last at or before ``end``."""
        i = bisect.bisect_left(self._times, start)
        j = bisect.bisect_right(self._times, end) - 1
        return (i, j) if j > i else None

    def between(self, start: float, end: float) -> dict[str, float]:
        """Each role's CPU seconds over :meth:`span` of the window."""
        window = self._window(start, end)
        if window is None:
            return dict.fromkeys(ROLES, 0.0)
        i, j = window
        return {r: self._totals[j][r] - self._totals[i][r] for r in ROLES}

    def span(self, start: float, end: float) -> float:
        """The seconds between the window's first and last sample."""
        window = self._window(start, end)
        return self._times[window[1]] - self._times[window[0]] if window else 0.0
