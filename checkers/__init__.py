"""jepka's checkers: reading histories and judging them with PySpark jobs.

Independent of the rest of jepka: a checker learns only what a client observed.
The entry point is :func:`check` (history in, result object out).
"""

from __future__ import annotations

from typing import Any


def check(source: Any, **kwargs: Any) -> dict[str, Any]:
    """See :func:`checkers.analyze.check`; imported lazily so that reading
    histories does not need Spark."""
    from checkers.analyze import check as _check

    return _check(source, **kwargs)


def warm_up(spark: Any) -> dict[str, Any]:
    """See :func:`checkers.analyze.warm_up`."""
    from checkers.analyze import warm_up as _warm_up

    return _warm_up(spark)


__all__ = ["check", "warm_up"]
