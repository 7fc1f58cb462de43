"""Node specs: which nodes a fault hits (Jepsen's `db-nodes`).

`one`, `minority`, `majority`, `minority-third`, `all`, a random non-empty
subset (`None`/`"random"`), Kafka roles (`leaders`, `controller`) asked of
the live cluster through a `Roles` object, or explicit node names.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Protocol

from nemesis.grudge import majority


class Roles(Protocol):
    """Who holds a role right now, asked of the cluster through a client."""

    def controller(self) -> str:
        """The node of the active controller."""
        ...

    def leader(self, topic: str | None = None, partition: int | None = None) -> str:
        """The leader of a partition (a random one when not given)."""
        ...

    def leaders(self) -> list[str]:
        """Every node leading at least one partition."""
        ...

    def coordinator(self, kind: str, key: str) -> str:
        """The coordinator node of a group (`kind="group"`) or transactional id
        (`kind="transaction"`)."""
        ...

    def close(self) -> None:
        """Drops any connection to the cluster, so no client outlives it."""
        ...


class TargetError(ValueError):
    """A node spec that names no usable nodes."""


SPECS = ("one", "minority", "majority", "minority-third", "all", "random", "leaders", "controller")


def resolve(
    spec: str | Sequence[str] | None,
    nodes: Sequence[str],
    rng: random.Random,
    roles: Roles | None = None,
) -> list[str]:
    """The node names a spec denotes, in cluster order."""
    names = list(nodes)
    n = len(names)
    if spec is None or spec == "random":
        chosen = rng.sample(names, rng.randint(1, n))
    elif spec == "one":
        chosen = [rng.choice(names)]
    elif spec == "minority":
        chosen = rng.sample(names, majority(n) - 1)
    elif spec == "majority":
        chosen = rng.sample(names, majority(n))
    elif spec == "minority-third":
        chosen = rng.sample(names, max(1, math.ceil(n / 3) - 1))
    elif spec == "all":
        chosen = names
    elif spec in ("leaders", "controller"):
        if roles is None:
            raise TargetError(f"node spec {spec!r} needs a cluster to ask who holds the role")
        chosen = roles.leaders() if spec == "leaders" else [roles.controller()]
    else:
        chosen = spec.split(",") if isinstance(spec, str) else list(spec)
        unknown = [c for c in chosen if c not in names]
        if unknown:
            raise TargetError(f"unknown node(s) {', '.join(unknown)}; nodes are {', '.join(names)}")
    return [x for x in names if x in set(chosen)]
