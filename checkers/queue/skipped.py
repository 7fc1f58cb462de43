"""Naming the values a skip jumped over, so an explanation can show them."""

from __future__ import annotations

from typing import Any

from checkers.queue.key_log import KeyLog

SHOWN = 8


def skipped(kl: KeyLog, lo: int, hi: int) -> dict[str, Any]:
    """``skipped``: the first few values at dense indices strictly between
    ``lo`` and ``hi``, and ``skipped_count``."""
    shown = kl.by_index[lo + 1 : min(hi - 1, lo + SHOWN) + 1]
    return {"skipped": [int(v) for v in shown], "skipped_count": hi - lo - 1}
