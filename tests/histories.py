"""Checks of a history's shape shared by the generator and interpreter tests."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def assert_invocations_paired(history: Iterable[dict[str, Any]]) -> None:
    """Each process has at most one open op: every completion closes its process's
    invocation of the same ``f``, and none is left open at the end."""
    open_: dict[Any, dict[str, Any]] = {}
    for o in history:
        if o["type"] == "invoke":
            assert o["process"] not in open_
            open_[o["process"]] = o
        else:
            assert open_.pop(o["process"])["f"] == o["f"]
    assert not open_
