"""Running a stored run again: the same ops, the same faults at the same moments.

A run's ``test.json`` holds its whole spec and seed, so the op generator
gives the same ops; its history holds every fault with its target as meant
and as resolved (``faults.yml``). A replay runs the faults as a schedule
file with the targets drawn at random pinned to the nodes they hit, and
role targets (the controller, a partition's leader) asked afresh of the new
cluster. What it reports is how often the stored run's anomaly kinds come
back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.runner import Origin, RunEndedBadly, RunResult, run_test
from harness.spec import SpecError, TestSpec, resolve
from harness.store import FAULTS_YML, RESULTS_JSON, TEST_JSON
from nemesis.package import KINDS
from nemesis.plan import FaultPlan, PlanError, applied, load

REPLAY_HEADER = """\
The faults of {run}, targets drawn at random pinned to the nodes they hit;
roles are asked afresh of each new cluster."""


def anomaly_kinds(results: Mapping[str, Any]) -> set[str]:
    """The anomaly kinds a result reports that the test forbids."""
    allowed = set(results.get("allowed") or ())
    return {k for k, v in (results.get("anomalies") or {}).items() if v and k not in allowed}


def op_times(instance: Any) -> list[int]:
    """The times (ns) of every op an anomaly instance names, however nested."""
    if isinstance(instance, dict):
        own = [instance["time"]] if isinstance(instance.get("time"), int) else []
        return own + [t for v in instance.values() for t in op_times(v)]
    if isinstance(instance, list):
        return [t for v in instance for t in op_times(v)]
    return []


#: kinds an instance of which shows only once the final reads have ended
SHOWN_AT_THE_END = frozenset({"unseen", "eos-lost", "hanging-transaction"})


def evident_at(results: Mapping[str, Any], kinds: Iterable[str]) -> float | None:
    """When an anomaly of ``kinds`` first showed (s into the run): the
    earliest, over their instances, of the time each became visible, as its
    checker says (``evident``, e.g. when a second value was first read at an
    offset), else a guess, the latest op it names; an instance names only
    some of the ops that saw it, so the guess can be early or late. None for
    kinds that show only at the end."""
    anomalies = results.get("anomalies") or {}
    shown = [
        at
        for kind in kinds
        if kind not in SHOWN_AT_THE_END
        for instance in anomalies.get(kind) or ()
        if (at := _shown(instance)) is not None
    ]
    return round(min(shown) / 1e9, 1) if shown else None


def _shown(instance: Any) -> int | None:
    if isinstance(instance, dict) and isinstance(instance.get("evident"), int):
        return int(instance["evident"])
    times = op_times(instance)
    return max(times) if times else None


@dataclass(frozen=True)
class StoredRun:
    """A run directory read back: its spec, its faults and what it found."""

    path: Path
    spec: TestSpec
    plan: FaultPlan
    #: None for a run never checked (no results.json)
    results: dict[str, Any] | None

    @property
    def kinds(self) -> set[str]:
        return anomaly_kinds(self.results or {})

    @classmethod
    def load(cls, path: Path) -> StoredRun:
        """Raises SpecError naming the file when the run cannot be read."""
        path = path.resolve() if path.is_symlink() else path
        test = _json(path / TEST_JSON)
        if not isinstance(test.get("spec"), dict):
            raise SpecError(f"{path / TEST_JSON}: no spec recorded")
        # the faults are the run's own (faults.yml), not its schedule file's,
        # which may have moved or changed since
        settings = {k: v for k, v in test["spec"].items() if k != "schedule"}
        spec = resolve(settings, None, str(path / TEST_JSON))
        results = _json(path / RESULTS_JSON) if (path / RESULTS_JSON).exists() else None
        return cls(path, spec, _faults(path, spec), results)

    def spec_for(self, schedule: Path, name: str, **changes: Any) -> TestSpec:
        """This run's spec, running ``schedule`` and stored as ``name``."""
        settings = {**self.spec.to_dict(), **changes}
        settings.update(
            schedule=str(schedule), nemesis=None, nemesis_mode=None, name=name, test_count=1
        )
        return resolve(settings, None, str(self.path / TEST_JSON))


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except OSError as e:
        raise SpecError(f"{path}: cannot read: {e.strerror}; is it a run directory?") from None
    except ValueError as e:
        raise SpecError(f"{path}: not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a JSON object")
    return data


def _faults(path: Path, spec: TestSpec) -> FaultPlan:
    """The run's faults: its ``faults.yml``, else read from its history."""
    try:
        if (path / FAULTS_YML).exists():
            return load(path / FAULTS_YML, KINDS)
    except PlanError as e:
        raise SpecError(str(e)) from None
    from history import read_ops
    from history.errors import HistoryError

    history = path / "history.jsonl"
    if not history.exists():
        raise SpecError(f"{path}: no faults.yml and no history.jsonl to read the faults from")
    try:
        return applied(read_ops(history, "jsonl"), KINDS, spec.time_limit)
    except HistoryError as e:
        raise SpecError(str(e)) from None


@dataclass
class Replay:
    """The replays of one run and which of its anomaly kinds each showed."""

    run: StoredRun
    schedule: Path
    #: per replay: its run directory (what it ended with, when it ended
    #: badly), its verdict ("crashed" then) and the kinds it showed
    runs: list[tuple[Path | str, Any, set[str]]] = field(default_factory=list)
    interrupted: bool = False

    def add(self, result: RunResult) -> None:
        self.runs.append(
            (result.run_dir.path, result.results.get("valid"), anomaly_kinds(result.results))
        )

    def add_crashed(self, error: RunEndedBadly) -> None:
        self.runs.append((str(error), "crashed", set()))

    def came_back(self, kinds: Iterable[str]) -> int:
        """How many replays showed at least one of ``kinds``."""
        wanted = set(kinds)
        return sum(1 for _, _, found in self.runs if found & wanted)

    def summary(self) -> list[str]:
        """One line per anomaly kind of the stored run, then one per replay."""
        n = len(self.runs)
        lines = [
            f"{kind}: came back in {self.came_back([kind])} of {n} replays"
            for kind in sorted(self.run.kinds)
        ]
        if not lines:
            some = sum(1 for _, _, found in self.runs if found)
            found = "was never checked" if self.run.results is None else "found no anomaly"
            lines = [f"the stored run {found}; {some} of {n} replays found one"]
        for path, valid, found in self.runs:
            lines.append(f"  {path}: valid {valid}; {', '.join(sorted(found)) or 'no anomaly'}")
        return lines


def write_pinned(run: StoredRun, directory: Path, name: str = "schedule.yml") -> Path:
    """The run's faults with random targets pinned, as a schedule file."""
    directory.mkdir(parents=True, exist_ok=True)
    plan = run.plan.pinned(KINDS)
    return plan.write(directory / name, REPLAY_HEADER.format(run=run.path))


def replay(
    run: StoredRun,
    times: int,
    run_one: Callable[[TestSpec, Origin], RunResult] | None = None,
    on_run: Callable[[int, RunResult], None] | None = None,
) -> Replay:
    """Runs ``run`` again ``times`` times; ``run_one`` runs one spec (the
    real ``run_test`` unless given)."""
    schedule = write_pinned(run, run.path / "replay")
    spec = run.spec_for(schedule, f"{run.spec.test_name}-replay")
    run_one = run_one or (lambda s, o: run_test(s, origin=o))
    out = Replay(run, schedule)
    for i in range(times):
        try:
            result = run_one(spec, Origin("replay", run.path))
        except RunEndedBadly as e:  # no verdict, and the replays go on
            out.add_crashed(e)
            continue
        if result.outcome is not None and result.outcome.interrupted:
            out.interrupted = True  # Ctrl-C: this run does not count, and no more run
            break
        out.add(result)
        if on_run is not None:
            on_run(i + 1, result)
    return out
