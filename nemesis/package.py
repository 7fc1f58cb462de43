"""Nemesis packages: what `--nemesis kill,pause,partition` builds.

A package bundles the composed nemesis (routing ops by `f`), the faults it
schedules and how: `schedule(duration)` gives the seeded timeline of nemesis
ops and `final_ops()` the heal that runs before the final reads (Jepsen's
`{:nemesis :generator :final-generator}`).

Names accepted by `--nemesis`:
`kill`, `pause`, `partition` (a random grudge kind each time), one partition
kind alone (`partition-one`, `partition-majority`, `partition-majorities-ring`,
`partition-minority-third`, `partition-bridge`, `isolate-leader`,
`isolate-controller`, `isolate-coordinator`, `clients`), `lose-unfsynced`,
`clock` (bumps) and `clock-strobe`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from control.backends.base import Node
from control.db.base import DaemonDB
from nemesis import clock, partition, process
from nemesis.base import Bound, Compose, Nemesis, NemesisContext, NemesisError, OpDict
from nemesis.clock import Clock
from nemesis.disk import LoseUnfsynced
from nemesis.grudge import GRUDGES
from nemesis.partition import ROLE_KINDS, Partition
from nemesis.process import Kill, Pause
from nemesis.schedule import Fault, alternate, final_ops, rotate

DEFAULT_TARGETS = ("one", "minority", "majority", "all")
DEFAULT_PARTITIONS = ("one", "majority", "majorities-ring", "bridge")
PARTITION_NAMES = {
    **{f"partition-{k}": k for k in GRUDGES},
    **{k: k for k in ROLE_KINDS},
    "clients": "clients",
}
NAMES = ("kill", "pause", "partition", *PARTITION_NAMES, "lose-unfsynced", "clock", "clock-strobe")
MODES = ("alternate", "rotate")
# How each fault family undoes itself on one node, in the order a cluster's
# final heal applies them (the clock is reset before a killed broker starts).
# Losing unfsynced data cannot be undone.
NODE_HEALS: tuple[Callable[[Node, DaemonDB, Sequence[Node]], None], ...] = (
    partition.heal_node,
    clock.heal_node,
    process.heal_node,
)


def _bump(rng: random.Random) -> dict[str, Any]:
    """Jepsen's bump-time: ±1.5^(6..31) ms, about 11 ms to 288 s."""
    return {
        "targets": rng.choice(DEFAULT_TARGETS),
        "delta_ms": round(rng.choice((-1, 1)) * 1.5 ** rng.randint(6, 31), 3),
    }


def _strobe(rng: random.Random) -> dict[str, Any]:
    """Jepsen's strobe-time ranges, with the period and duration bounded so a
    flip is a file write the node can keep up with."""
    return {
        "targets": rng.choice(DEFAULT_TARGETS),
        "delta_ms": 2 ** rng.randint(2, 18),
        "period_ms": 2 ** rng.randint(4, 10),
        "duration_s": round(rng.uniform(0, 10), 3),
    }


@dataclass
class NemesisPackage:
    nemesis: Compose
    faults: list[Fault]
    seed: int
    interval: float = 10.0
    mode: str = "alternate"
    stable_period: float | None = None
    names: list[str] = field(default_factory=list)

    def schedule(self, duration: float) -> list[tuple[float, OpDict]]:
        """The seeded timeline of nemesis ops for a run of `duration` seconds."""
        if self.mode == "rotate":
            return rotate(
                self.faults,
                seed=self.seed,
                duration=duration,
                interval=self.interval,
                stable_period=self.stable_period,
            )
        return alternate(self.faults, seed=self.seed, duration=duration, interval=self.interval)

    def final_ops(self) -> list[OpDict]:
        return final_ops(self.faults)

    def bind(self, ctx: NemesisContext) -> Bound:
        """The nemesis in the runner's protocol, bound to a cluster."""
        return Bound(self.nemesis, ctx)


def parse_names(text: str | Sequence[str]) -> list[str]:
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text) if n.strip()]
    unknown = [n for n in names if n not in NAMES and n != "none"]
    if unknown:
        raise NemesisError(f"unknown nemesis {', '.join(unknown)}; known: {', '.join(NAMES)}")
    return [n for n in names if n != "none"]


def build(
    names: str | Sequence[str],
    *,
    seed: int,
    interval: float = 10.0,
    mode: str = "alternate",
    stable_period: float | None = None,
    targets: Sequence[str] = DEFAULT_TARGETS,
    coordinator: dict[str, str] | None = None,
) -> NemesisPackage:
    """A package from `--nemesis` names (comma-separated) and options."""
    chosen = parse_names(names)
    if mode not in MODES:
        raise NemesisError(f"unknown nemesis mode {mode!r}; known: {', '.join(MODES)}")
    if interval <= 0:
        raise NemesisError(f"--nemesis-interval must be positive, got {interval}")
    tlist = list(targets)

    def pick_target(rng: random.Random) -> str:
        return rng.choice(tlist)

    nemeses: list[Nemesis] = []
    faults: list[Fault] = []
    if "kill" in chosen:
        nemeses.append(Kill())
        faults.append(Fault("kill", "kill", pick_target, "start"))
    if "pause" in chosen:
        nemeses.append(Pause())
        faults.append(Fault("pause", "pause", pick_target, "resume"))
    kinds = [PARTITION_NAMES[n] for n in chosen if n in PARTITION_NAMES]
    if "partition" in chosen:
        kinds = list(dict.fromkeys([*DEFAULT_PARTITIONS, *kinds]))
    if kinds:
        extra = coordinator or {"group": "jepka"}

        def pick_kind(rng: random.Random) -> Any:
            kind = rng.choice(kinds)
            return {"kind": kind, **extra} if kind == "isolate-coordinator" else kind

        nemeses.append(Partition())
        faults.append(Fault("partition", "start-partition", pick_kind, "stop-partition", None))
    if "lose-unfsynced" in chosen:
        nemeses.append(LoseUnfsynced())
        faults.append(Fault("lose-unfsynced", "lose-unfsynced", pick_target, None))
    if "clock" in chosen or "clock-strobe" in chosen:
        nemeses.append(Clock())
        if "clock" in chosen:
            faults.append(Fault("clock", "bump-clock", _bump, "reset-clock"))
        if "clock-strobe" in chosen:
            faults.append(Fault("clock-strobe", "strobe-clock", _strobe, None))
    return NemesisPackage(
        nemesis=Compose(nemeses),
        faults=faults,
        seed=seed,
        interval=interval,
        mode=mode,
        stable_period=stable_period,
        names=chosen,
    )
