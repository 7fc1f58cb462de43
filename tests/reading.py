"""Reading records back in tests: poll until enough have come."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def poll_records(
    consumer: Any,
    count: int,
    timeout: float,
    *,
    until: Callable[[list[Any]], bool] | None = None,
) -> list[Any]:
    """The records ``consumer`` polls (events such as a partition's end are
    not records) until there are ``count``, ``until(records)`` holds, or
    ``timeout`` seconds have passed; the caller asserts what it expected."""
    records: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(records) < count and not (until and until(records)):
        if time.monotonic() >= deadline:
            break
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            records.append(message)
    return records
