"""Runs of anomaly instances read as one event: bursts.

A fault that loses a stretch of a partition's log makes the checker report one
instance per message, so a kind can hold hundreds of lines that say the same
thing. A burst is a run of instances of one kind on one key whose positions
(offsets, else values) are adjacent: the page shows it as one line, e.g.
"41 lost-write instances on key 2, offsets 113-153", which opens on the
instances. Every stored instance is in exactly one burst, so the bursts'
counts add up to what ``results.json`` stores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: instance fields that place an instance in its key's log, the first present wins
POSITIONS = (("offset", "offsets"), ("value", "values"))


def position(instance: Any) -> tuple[Any, str, int] | None:
    """``(key, what, n)``: where an instance sits in its key's log (``what`` is
    "offsets" or "values"); None for an instance not about one spot of one key."""
    if not isinstance(instance, Mapping) or "key" not in instance:
        return None
    key = instance["key"]
    if isinstance(key, bool) or not isinstance(key, int | str):
        return None
    for field, what in POSITIONS:
        n = instance.get(field)
        if isinstance(n, int) and not isinstance(n, bool):
            return key, what, n
    return None


@dataclass(frozen=True, slots=True)
class Burst:
    """Instances (positions in the kind's list) in log order, and where they lie."""

    members: list[int]
    key: Any = None
    what: str = ""  # "offsets" or "values"; empty for a lone unplaced instance
    lo: int = 0
    hi: int = 0

    def label(self, kind: str) -> str | None:
        """The line a burst of more than one instance reads as; None for a lone one."""
        if len(self.members) < 2:
            return None
        span = (
            f"{self.what[:-1]} {self.lo}"
            if self.lo == self.hi
            else f"{self.what} {self.lo}\u2013{self.hi}"
        )
        return f"{len(self.members)} {kind} instances on key {self.key}, {span}"


def bursts(instances: Sequence[Any]) -> list[Burst]:
    """``instances`` grouped into bursts, in order of each burst's first
    instance. Two instances join when they are on the same key and their
    positions differ by at most 1 (two ops may name the same offset)."""
    placed: dict[tuple[Any, str], list[tuple[int, int]]] = {}
    out: list[Burst] = []
    for i, instance in enumerate(instances):
        where = position(instance)
        if where is None:
            out.append(Burst([i]))
        else:
            placed.setdefault(where[:2], []).append((where[2], i))
    for (key, what), members in placed.items():
        members.sort()
        start = 0
        for j in range(1, len(members) + 1):
            if j == len(members) or members[j][0] - members[j - 1][0] > 1:
                run = members[start:j]
                out.append(Burst([i for _, i in run], key, what, run[0][0], run[-1][0]))
                start = j
    out.sort(key=lambda b: min(b.members))
    return out
