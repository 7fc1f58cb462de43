"""CPU time of a process, from /proc: the brokers' work apart from the clients'.

Imported by the ``bench_*.py`` scripts (run as files, so this directory is on
their path); not a benchmark itself, hence not named ``bench_*``.
"""

from __future__ import annotations

import os
from pathlib import Path


def cpu_seconds(*pids: int) -> float:
    """User and system CPU seconds of ``pids`` together so far; OSError once
    one is gone."""
    return sum(_ticks(pid) for pid in pids) / os.sysconf("SC_CLK_TCK")


def _ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])
