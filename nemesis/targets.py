"""Node specs: which nodes a fault hits (Jepsen's `db-nodes`).

`one`, `minority`, `majority`, `minority-third`, `all`, a random non-empty
subset (`None`/`"random"`), Kafka roles (`leaders`, every node leading a
partition; `some-leaders`, a random non-empty subset of them, Jepsen's
`:primaries`; `controller`; and `{leader-of-key: K}`, the leader of key K's
partition) asked of the live cluster through a `Roles` object, or explicit
node names.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

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


ROLE_SPECS = ("leaders", "some-leaders", "controller")
SPECS = ("one", "minority", "majority", "minority-third", "all", "random", *ROLE_SPECS)
#: the specs that draw their nodes at random: a replay pins them to the nodes drawn
RANDOM_SPECS = (None, "random", "one", "minority", "majority", "minority-third", "some-leaders")
#: the one key of a mapping spec: the leader of a key's partition
KEY_LEADER = "leader-of-key"

TopicPartitionOf = Callable[[int], tuple[str, int]]
NodeSpec = str | Sequence[str] | Mapping[str, Any] | None


def check(spec: Any, nodes: Sequence[str] | None = None) -> None:
    """Raises TargetError for a value that is no node spec, or that names
    a node not among ``nodes`` (when given)."""
    named: list[str] | None = None
    if isinstance(spec, str) and spec.strip():
        named = [] if spec in SPECS else [n.strip() for n in spec.split(",")]
    elif isinstance(spec, list) and spec and all(isinstance(x, str) for x in spec):
        named = list(spec)
    if spec is None or named is not None:
        unknown = [n for n in named or [] if nodes is not None and n not in nodes]
        if unknown:
            raise TargetError(
                f"unknown node(s) {', '.join(unknown)}; nodes are {', '.join(nodes or [])}"
            )
        return
    if isinstance(spec, Mapping) and list(spec) == [KEY_LEADER]:
        key = spec[KEY_LEADER]
        if type(key) is int and key >= 0:
            return
    raise TargetError(
        f"not a node spec: {spec!r}; expected one of {', '.join(SPECS)}, node names, "
        f"or {{{KEY_LEADER}: KEY}}"
    )


def pin(spec: Any, done: Any) -> Any:
    """``spec``, or the nodes it resolved to (``done``) when it drew them at
    random: what a replay targets to hit the same nodes."""
    if spec in RANDOM_SPECS and isinstance(done, list) and done:
        return list(done)
    return spec


def pin_nodes(key: str) -> Callable[[Any, Any], Any]:
    """A `Fault.pin` for a fault whose start value is a node spec and whose
    completion lists the nodes hit under ``key``."""
    return lambda spec, done: pin(spec, done.get(key)) if isinstance(done, Mapping) else spec


def _nonempty_subset(names: Sequence[str], rng: random.Random) -> list[str]:
    """A random non-empty subset of ``names`` (Jepsen's
    `random-nonempty-subset`)."""
    return rng.sample(names, rng.randint(1, len(names)))


def _holders(spec: str, roles: Roles, names: Sequence[str], rng: random.Random) -> list[str]:
    """The nodes holding a role now; for ``some-leaders``, a subset of them."""
    if spec == "controller":
        return [roles.controller()]
    if spec == "leaders":
        return roles.leaders()
    # a generator of its own, drawn before the lookup (which may fail): how
    # much a subset draws depends on how many nodes lead now, which must not
    # move the nodes that later faults hit
    own = random.Random(rng.getrandbits(64))
    leaders = set(roles.leaders())
    return _nonempty_subset([x for x in names if x in leaders], own) if leaders else []


def resolve(
    spec: NodeSpec,
    nodes: Sequence[str],
    rng: random.Random,
    roles: Roles | None = None,
    topic_partition: TopicPartitionOf | None = None,
) -> list[str]:
    """The node names a spec denotes, in cluster order; ``topic_partition``
    names a key's partition for ``{leader-of-key: K}``."""
    names = list(nodes)
    n = len(names)
    if isinstance(spec, Mapping):
        check(spec)
        if roles is None or topic_partition is None:
            raise TargetError(f"{KEY_LEADER} needs a cluster to ask who leads the key")
        return [roles.leader(*topic_partition(int(spec[KEY_LEADER])))]
    if spec is None or spec == "random":
        chosen = _nonempty_subset(names, rng)
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
    elif spec in ROLE_SPECS:
        if roles is None:
            raise TargetError(f"node spec {spec!r} needs a cluster to ask who holds the role")
        chosen = _holders(spec, roles, names, rng)
    else:
        chosen = spec.split(",") if isinstance(spec, str) else list(spec)
        unknown = [c for c in chosen if c not in names]
        if unknown:
            raise TargetError(f"unknown node(s) {', '.join(unknown)}; nodes are {', '.join(names)}")
    return [x for x in names if x in set(chosen)]
