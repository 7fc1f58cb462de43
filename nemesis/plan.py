"""A fault schedule as data: which fault, when, for how long, against whom.

A `FaultPlan` is a list of `PlannedFault`s, each a fault (a `Fault` name:
`kill`, `pause`, `partition`, `clock`, `clock-strobe`, `lose-unfsynced`),
the second after the workload's start it begins, how long until its heal,
and its target as meant: the start op's value, such as `one`, `controller`,
`{leader-of-key: 3}`, `[n1, n2]` or a partition kind such as
`isolate-leader`. Read back from a run's history, each fault also holds its
target as resolved: what the nemesis said it did (the nodes killed, the
grudge applied).

As YAML, the file `jepka test --schedule` reads and every run stores as
`faults.yml`:

    faults:
      - {at: 5, fault: kill, target: controller, duration: 6}
      - {at: 14, fault: partition, target: isolate-leader, duration: 10}
      - at: 30
        fault: pause
        target: [n1, n2]

A fault's heal (`start`, `resume`, `stop-partition`, `reset-clock`) undoes
every fault of its kind, as the nemesis does; a fault without a `duration`
lasts until the final heal.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from history.op import Op
from nemesis.schedule import Fault, OpDict

FIELDS = ("at", "fault", "target", "duration", "resolved")


class PlanError(ValueError):
    """A schedule that cannot be run; the message names the file and fault."""


@dataclass(frozen=True)
class PlannedFault:
    at: float
    fault: str
    target: Any = None
    #: seconds until its heal; None: until the final heal (or one-shot)
    duration: float | None = None
    #: what the nemesis said it did, for a fault read from a run
    resolved: Any = None

    @property
    def end(self) -> float:
        return self.at + (self.duration or 0.0)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"at": self.at, "fault": self.fault, "target": self.target}
        if self.duration is not None:
            out["duration"] = self.duration
        if self.resolved is not None:
            out["resolved"] = self.resolved
        return out


@dataclass(frozen=True)
class FaultPlan:
    faults: tuple[PlannedFault, ...] = ()

    @property
    def names(self) -> list[str]:
        """The fault names it uses, in first-use order: its `--nemesis`."""
        return list(dict.fromkeys(f.fault for f in self.faults))

    def timeline(self, kinds: Mapping[str, Fault]) -> list[tuple[float, OpDict]]:
        """The nemesis ops at their seconds: each fault's start, then its heal."""
        out: list[tuple[float, OpDict]] = []
        for f in self.faults:
            kind = kinds[f.fault]
            out.append((f.at, {"process": "nemesis", "f": kind.start_f, "value": f.target}))
            stop = kind.stop()
            if stop is not None and f.duration is not None:
                out.append((f.end, stop))
        return sorted(out, key=lambda entry: entry[0])

    def check_nodes(self, kinds: Mapping[str, Fault], nodes: Sequence[str], where: str) -> None:
        """Raises PlanError for a target naming a node the cluster has not."""
        for i, f in enumerate(self.faults, 1):
            try:
                kinds[f.fault].check(f.target, nodes)
            except ValueError as e:
                raise PlanError(f"{where}: fault {i} ({f.fault} at {f.at:g} s): {e}") from None

    def pinned(self, kinds: Mapping[str, Fault]) -> FaultPlan:
        """Targets drawn at random replaced by what they resolved to, roles
        kept: what a replay runs to hit the same nodes with the same faults."""
        return FaultPlan(
            tuple(
                replace(f, target=kinds[f.fault].pin(f.target, f.resolved), resolved=None)
                if f.resolved is not None
                else f
                for f in self.faults
            )
        )

    def to_yaml(self, header: str = "") -> str:
        comment = "".join(f"# {line}\n" for line in header.splitlines())
        body = yaml.safe_dump(
            {"faults": [f.to_dict() for f in self.faults]},
            sort_keys=False,
            width=100,
            default_flow_style=None,
        )
        return comment + body

    def write(self, path: Path, header: str = "") -> Path:
        path.write_text(self.to_yaml(header))
        return path


def _number(raw: Any, what: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        raise PlanError(f"{what} must be a number of seconds, got {raw!r}")
    if raw < 0:
        raise PlanError(f"{what} must not be negative, got {raw}")
    return float(raw)


def parse(data: Any, kinds: Mapping[str, Fault], where: str) -> FaultPlan:
    """A plan from its YAML form; every error names ``where`` and the fault."""
    if not isinstance(data, dict) or not isinstance(data.get("faults"), list):
        raise PlanError(f"{where}: expected a mapping with a list `faults`")
    unknown = sorted(map(str, set(data) - {"faults"}))
    if unknown:
        raise PlanError(f"{where}: unknown key(s) {', '.join(unknown)}; expected `faults`")
    faults = []
    for i, entry in enumerate(data["faults"], 1):
        what = f"{where}: fault {i}"
        if not isinstance(entry, dict):
            raise PlanError(f"{what}: expected a mapping, got {entry!r}")
        extra = sorted(map(str, set(entry) - set(FIELDS)))
        if extra:
            raise PlanError(f"{what}: unknown key(s) {', '.join(extra)}")
        name = entry.get("fault")
        if not isinstance(name, str) or name not in kinds:
            raise PlanError(f"{what}: unknown fault {name!r}; known: {', '.join(kinds)}")
        if "at" not in entry:
            raise PlanError(f"{what}: `at` (seconds after the start) is missing")
        at = _number(entry["at"], f"{what}: at")
        duration = entry.get("duration")
        if duration is not None:
            duration = _number(duration, f"{what}: duration")
            if kinds[name].stop_f is None:
                raise PlanError(f"{what}: {name} is one-shot and takes no duration")
        if "target" not in entry:
            raise PlanError(f"{what}: `target` is missing (a node spec, a role or node names)")
        target = entry["target"]
        try:
            kinds[name].check(target, None)
        except ValueError as e:
            raise PlanError(f"{what}: target: {e}") from None
        faults.append(PlannedFault(at, name, target, duration, entry.get("resolved")))
    return FaultPlan(tuple(sorted(faults, key=lambda f: f.at)))


def read_yaml(path: str | Path) -> Any:
    """A YAML file's data; PlanError names the file (and line) it cannot read."""
    try:
        return yaml.safe_load(Path(path).read_text())
    except OSError as e:
        raise PlanError(f"{path}: cannot read: {e.strerror}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" line {mark.line + 1}" if mark is not None else ""
        raise PlanError(f"{path}:{at} not valid YAML: {getattr(e, 'problem', e)}") from None


def load(path: str | Path, kinds: Mapping[str, Fault]) -> FaultPlan:
    """The plan in a YAML file."""
    return parse(read_yaml(path), kinds, str(path))


def applied(
    ops: Iterable[Op], kinds: Mapping[str, Fault], time_limit: float | None = None
) -> FaultPlan:
    """The faults a recorded history shows, with their targets as meant and
    as resolved; heals at or after ``time_limit`` (the final heal) leave a
    fault without a duration."""
    by_start = {k.start_f: k for k in kinds.values()}
    healed_by: dict[str, list[str]] = {}
    for k in kinds.values():
        if k.stop_f is not None:
            healed_by.setdefault(k.stop_f, []).append(k.name)
    faults: list[dict[str, Any]] = []
    open_: dict[str, list[dict[str, Any]]] = {}
    invoked: dict[Any, Op] = {}
    for op in ops:
        if op.process != "nemesis":
            continue
        if op.type == "invoke":
            invoked[op.process] = op
            continue
        start = invoked.pop(op.process, None)
        if start is None:
            continue
        at = round(start.time / 1e9, 3)
        if start.f in by_start:
            kind = by_start[start.f]
            done = None if op.extra.get("error") else op.value
            fault = {"at": at, "fault": kind.name, "target": start.value, "resolved": done}
            faults.append(fault)
            if kind.stop_f is not None:
                open_.setdefault(kind.name, []).append(fault)
        elif start.f in healed_by and (time_limit is None or at < time_limit):
            for name in healed_by[start.f]:
                for fault in open_.pop(name, []):
                    fault["duration"] = round(at - fault["at"], 3)
    for start in invoked.values():  # the run ended with this op in flight
        if start.f in by_start:
            at = round(start.time / 1e9, 3)
            faults.append({"at": at, "fault": by_start[start.f].name, "target": start.value})
    return FaultPlan(tuple(PlannedFault(**f) for f in faults))


def subset(plan: FaultPlan, keep: Sequence[int]) -> FaultPlan:
    """The plan with only the faults at the indices ``keep``."""
    return FaultPlan(tuple(plan.faults[i] for i in sorted(keep)))
