"""What Linux's scheduler says of a process's share of the CPU: the autogroup
of its session, and that group's nice value."""

from __future__ import annotations

import os

#: whether the kernel shares the CPU between sessions before processes
AUTOGROUPS = os.path.exists("/proc/self/autogroup")


def autogroup(pid: int | str) -> str:
    """``"/autogroup-123 nice 19"``; ``""`` for a process in the root group,
    whose session was never given a group of its own (it descends from
    init's without a ``setsid``, as under some CI runners); ``"none"``
    without autogroups."""
    if not AUTOGROUPS:
        return "none"
    with open(f"/proc/{pid}/autogroup") as f:
        return f.read().strip()


def nice(pid: int | str) -> str:
    """The nice value of a process's group: ``""`` in the root group, which
    a process that leads its own session is never in (``setsid`` gives it a
    group); ``"none"`` without autogroups."""
    words = autogroup(pid).split()
    return words[-1] if words else ""
