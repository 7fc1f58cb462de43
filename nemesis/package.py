"""Nemesis packages: what `--nemesis kill,pause,partition` builds.

A package bundles the composed nemesis (routing ops by `f`), the faults it
schedules and how: `schedule(duration)` gives the timeline of nemesis ops
(seeded at random, or a `FaultPlan` read from a schedule file) and
`final_ops()` the heal that runs before the final reads (Jepsen's
`{:nemesis :generator :final-generator}`).

Names accepted by `--nemesis`:
`kill`, `pause`, `partition` (a random grudge kind each time), one partition
kind alone (`partition-one`, `partition-majority`, `partition-majorities-ring`,
`partition-minority-third`, `partition-bridge`, `isolate-leader`,
`isolate-controller`, `isolate-coordinator`, `clients`), `lose-unfsynced`,
`clock` (bumps) and `clock-strobe`; and `standard`, the mix for finding
bugs without tuning: kills, pauses and partitions (random grudges of
`partition`, the cuts of the leader, the controller and a coordinator, and
clients cut off from brokers that still see each other), each on targets
of every size and role (one node to all of them, some of the partition
leaders, the controller), overlapping. Power loss is not in it: Kafka
acknowledges before it fsyncs (`flush.messages` is unbounded), so losing
unsynced data on replicas at once loses acknowledged writes by design (what
KIP-966 addresses), and that is no bug to find.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from nemesis import clock, disk, partition, process
from nemesis.base import Bound, Compose, NemesisContext, NemesisError, OpDict
from nemesis.family import DEFAULT_TARGETS, FaultFamily, FaultOptions, NodeHeal
from nemesis.plan import FaultPlan
from nemesis.schedule import Fault, alternate, episodes, final_ops, rotate

#: every fault family, in the order their faults join a schedule
FAMILIES: tuple[FaultFamily, ...] = (process.FAMILY, partition.FAMILY, disk.FAMILY, clock.FAMILY)
#: what `--nemesis standard` stands for, and the targets its faults draw from
STANDARD = (
    "kill",
    "pause",
    "partition",
    "isolate-leader",
    "isolate-controller",
    "isolate-coordinator",
    "clients",
)
STANDARD_TARGETS = (*DEFAULT_TARGETS, "some-leaders", "controller")
NAMES = (*(name for family in FAMILIES for name in family.names), "standard")
#: how a random schedule is shaped (``nemesis.schedule``)
MODES = ("alternate", "rotate", "episodes")
#: how a cluster's final heal undoes each family on a node, in order: the
#: clock is reset before a killed broker starts
NODE_HEALS: tuple[NodeHeal, ...] = tuple(
    family.heal_node
    for family in (partition.FAMILY, clock.FAMILY, process.FAMILY, disk.FAMILY)
    if family.heal_node is not None
)
#: the order of the final heal's ops, Jepsen's: the network first, so that
#: restarted brokers reach their quorum and the harness reaches them (a
#: broker cut off from the clients never answers as started), then clocks,
#: then paused brokers resume before killed ones start
HEAL_ORDER = ("stop-partition", "reset-clock", "resume", "start")
#: every fault by name (what a schedule file's `fault` names), with the
#: default options: its start and stop ops, how to check and pin a target
KINDS: dict[str, Fault] = {
    fault.name: fault
    for family in FAMILIES
    for fault in family.build(family.names, FaultOptions()).faults
}


@dataclass
class NemesisPackage:
    nemesis: Compose
    faults: list[Fault]
    seed: int
    interval: float = 10.0
    #: mean seconds a fault lasts (None: the interval)
    length: float | None = None
    mode: str = "alternate"
    stable_period: float | None = None
    names: list[str] = field(default_factory=list)
    #: the faults to run, when not drawn at random
    plan: FaultPlan | None = None

    def schedule(self, duration: float) -> list[tuple[float, OpDict]]:
        """The timeline of nemesis ops for a run of `duration` seconds."""
        if self.plan is not None:
            return [(t, op) for t, op in self.plan.timeline(KINDS) if t < duration]
        shapes: dict[str, Callable[..., list[tuple[float, OpDict]]]] = {
            "rotate": functools.partial(rotate, stable_period=self.stable_period),
            "episodes": episodes,
        }
        shape = shapes.get(self.mode, alternate)
        return shape(
            self.faults,
            seed=self.seed,
            duration=duration,
            interval=self.interval,
            length=self.length,
        )

    def final_ops(self) -> list[OpDict]:
        """The final heal, in ``HEAL_ORDER``."""
        rank = {f: i for i, f in enumerate(HEAL_ORDER)}
        return sorted(final_ops(self.faults), key=lambda op: rank.get(op["f"], len(rank)))

    def bind(self, ctx: NemesisContext) -> Bound:
        """The nemesis in the runner's protocol, bound to a cluster."""
        return Bound(self.nemesis, ctx)


def _split(text: str | Sequence[str]) -> list[str]:
    return [n.strip() for n in (text.split(",") if isinstance(text, str) else text) if n.strip()]


def parse_names(text: str | Sequence[str]) -> list[str]:
    """The fault names ``text`` asks for, ``standard`` spelt out."""
    names = _split(text)
    unknown = [n for n in names if n not in NAMES and n != "none"]
    if unknown:
        raise NemesisError(f"unknown nemesis {', '.join(unknown)}; known: {', '.join(NAMES)}")
    spelt = [m for n in names for m in (STANDARD if n == "standard" else (n,))]
    return list(dict.fromkeys(n for n in spelt if n != "none"))


def build(
    names: str | Sequence[str],
    *,
    seed: int,
    interval: float = 10.0,
    length: float | None = None,
    mode: str = "alternate",
    stable_period: float | None = None,
    targets: Sequence[str] = DEFAULT_TARGETS,
    coordinator: dict[str, str] | None = None,
    plan: FaultPlan | None = None,
) -> NemesisPackage:
    """A package from `--nemesis` names (comma-separated) and options; with
    a ``plan``, the package of the faults it names, running that plan."""
    asked = plan.names if plan is not None else names
    chosen = parse_names(asked)
    if "standard" in _split(asked) and tuple(targets) == DEFAULT_TARGETS:
        targets = STANDARD_TARGETS
    if mode not in MODES:
        raise NemesisError(f"unknown nemesis mode {mode!r}; known: {', '.join(MODES)}")
    if interval <= 0:
        raise NemesisError(f"--nemesis-interval must be positive, got {interval}")
    if length is not None and length <= 0:
        raise NemesisError(f"--fault-length must be positive, got {length}")
    options = FaultOptions(tuple(targets), coordinator)
    nemeses, faults = [], []
    for family in FAMILIES:
        built = family.build([n for n in chosen if n in family.names], options)
        nemeses += built.nemeses
        faults += built.faults
    return NemesisPackage(
        nemesis=Compose(nemeses),
        faults=faults,
        seed=seed,
        interval=interval,
        length=length,
        mode=mode,
        stable_period=stable_period,
        names=chosen,
        plan=plan,
    )
