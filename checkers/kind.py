"""One anomaly kind as one record: where it is found, how one instance is
told, what the kind means, and whether Kafka allows it.

Each kind's record sits beside its finder; :mod:`checkers.kinds` gathers them,
and the check tables, the explanations, the verdict and the reports all read
that registry, so a kind's parts cannot drift apart (as in Elle, where each
anomaly's finder sits beside its explainer).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from checkers.queue.key_log import KeyLog
    from checkers.spark.frames import Frames

Case = dict[str, Any]

WRITES_NOT_ISOLATED = (
    "Kafka transactions do not isolate writes, so another producer's records may "
    "interleave with a transaction's"
)


@dataclass(frozen=True)
class PerKey:
    """Found in each key's analysis (:func:`checkers.queue.check.analyse_key`)
    by ``find``, over the key's log alone."""

    find: Callable[[KeyLog], Iterable[Case]]


@dataclass(frozen=True)
class PerWorkload:
    """Found by a Spark job, ``find``, over histories whose ops carry
    ``field``: only the workloads that promise more write it."""

    field: str
    find: Callable[[Frames], DataFrame]


class CycleSearch(Enum):
    """Found by the cycle search over the whole dependency graph
    (:mod:`checkers.cycles`), not by a finder of the kind's own."""

    CYCLE = "a cycle, whose instances name their steps"
    TIMEOUT = "a component the search ran out of time in: the verdict is unknown, not invalid"


Finder = PerKey | PerWorkload | CycleSearch


@dataclass(frozen=True)
class Allowance:
    """Why Kafka permits a kind: whenever it occurs (``always``), or only when
    every instance found is allowed on its own (a case with ``"allowed":
    true``, a cycle that needs a ww edge)."""

    why: str
    always: bool = False

    def allows(self, total: int, allowed: int) -> bool:
        """Whether ``total`` instances, ``allowed`` of them allowed on their
        own, are allowed as a whole."""
        return self.always or allowed == total


@dataclass(frozen=True)
class Kind:
    """Everything about one anomaly kind."""

    name: str  # as results.json names it (Jepsen's and Elle's names where they have one)
    finder: Finder
    sentence: Callable[[Case], str]  # one instance, in plain words, from its data alone
    meaning: str  # the paragraph a report shows: what went wrong and why it matters
    allowed: Allowance | None = None  # None: never allowed
