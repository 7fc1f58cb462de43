"""A fault family: Jepsen's nemesis package, one per kind of fault.

Each family (process, partition, disk, clock) says which `--nemesis` names
it answers to, builds its nemeses and the faults its schedule draws from
for the names chosen, and says how a cluster's final heal undoes it on one
node. `nemesis.package` composes the families; `Cluster.heal` runs their
node heals.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from control.backends.base import Node
from control.db.base import DaemonDB
from nemesis.base import Nemesis
from nemesis.schedule import Fault

#: the node specs a fault targets unless told otherwise
DEFAULT_TARGETS = ("one", "minority", "majority", "all")

NodeHeal = Callable[[Node, DaemonDB, Sequence[Node]], None]


@dataclass(frozen=True)
class FaultOptions:
    """The `--nemesis` settings a family draws on."""

    #: node specs a targeted fault picks from at each start
    targets: Sequence[str] = DEFAULT_TARGETS
    #: what `isolate-coordinator` cuts off: a `group` or a `transactional_id`
    #: (none: the workload's group, asked of the context when it runs)
    coordinator: dict[str, str] | None = None

    def pick_target(self, rng: random.Random) -> str:
        return rng.choice(list(self.targets))


@dataclass(frozen=True)
class Build:
    """What a family contributes to a run: its nemeses and its faults."""

    nemeses: list[Nemesis]
    faults: list[Fault]


@dataclass(frozen=True)
class FaultFamily:
    name: str
    #: the `--nemesis` names this family answers to
    names: tuple[str, ...]
    #: the nemeses and faults for the chosen names (only names of this family)
    build: Callable[[Sequence[str], FaultOptions], Build]
    #: undoes every fault of the family on one node; None when nothing can
    heal_node: NodeHeal | None
