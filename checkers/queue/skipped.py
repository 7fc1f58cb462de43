"""Naming the values a skip jumped over, so an explanation can show them."""

from __future__ import annotations

from typing import Any

from checkers.kind import Case
from checkers.queue.key_log import KeyLog
from checkers.wording import listed

SHOWN = 8


def skipped(kl: KeyLog, lo: int, hi: int) -> dict[str, Any]:
    """``skipped``: the first few values at dense indices strictly between
    ``lo`` and ``hi``, and ``skipped_count``."""
    shown = kl.by_index[lo + 1 : min(hi - 1, lo + SHOWN) + 1]
    return {"skipped": [int(v) for v in shown], "skipped_count": hi - lo - 1}


def explain_skipped(c: Case, between: str = "") -> str:
    """``skipping 3 record(s) (4, 5, 6)``, ``between`` after ``record(s)``: the
    words for :func:`skipped`'s fields, as every skip's sentence uses them."""
    return (
        f"skipping {c['skipped_count']} record(s){between} "
        f"({listed(c.get('skipped') or [], c['skipped_count'])})"
    )
