"""Waiting in tests for a condition that a broker, a process or a file reaches
in its own time."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(
    predicate: Callable[[], T | None],
    timeout: float,
    *,
    interval: float = 0.05,
    what: str | Callable[[], str] = "",
    retry_on: tuple[type[BaseException], ...] = (),
) -> T:
    """Calls ``predicate`` until it returns a truthy value, and returns that value.

    ``predicate`` is called at least once, and again every ``interval`` seconds
    until ``timeout`` seconds have passed; then an ``AssertionError`` says
    ``what`` was awaited, so a timeout reads as the failed expectation it is.
    A callable ``what`` is called only then, to describe the state at the
    timeout. Exceptions of the ``retry_on`` types count as "not yet" (a broker
    still electing a leader answers with one); any other exception propagates
    at once, as it is a failure rather than a wait.

    A value such as offset 0 is falsy: return it inside a tuple.
    """
    deadline = time.monotonic() + timeout
    while True:
        value: T | None = None
        error: BaseException | None = None
        try:
            value = predicate()
        except retry_on as e:
            error = e
        if value:
            return value
        if time.monotonic() >= deadline:
            described = what() if callable(what) else what
            message = f"{described or 'condition'} (not within {timeout:g} s)"
            if error is not None:
                raise AssertionError(f"{message}; last error: {error!r}") from error
            raise AssertionError(f"{message}; last value: {value!r}")
        if interval > 0:
            time.sleep(interval)
