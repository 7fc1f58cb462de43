"""Shrinking an invalid run to a minimal reproduction, by delta debugging.

A candidate is a fault plan and the test's size: time limit, keys, clients.
It reproduces when at least ``need`` of ``tries`` runs of it show one of
the anomaly kinds being shrunk for (runs stop as soon as the answer is
known). From the stored run's faults (random targets pinned to the nodes
they hit, as a replay runs them), each step is kept only while the
candidate still reproduces:

1. the run cut ten seconds after its anomaly seems to have shown
   (``evident_at``), with no faults at all, then with the faults started
   by then; else the whole run with no faults, then the whole stored run,
   which must reproduce for the rest to run;
2. the time limit cut to five seconds after the last fault ends (or, for
   one lasting until the final heal, starts);
3. Zeller's ddmin over the faults: drop halves, then quarters, ...;
4. each fault's duration halved;
5. the time limit cut again;
6. fewer keys, then fewer clients, each halved down to one;
7. the answer run again (up to ``tries`` runs): a candidate that passed
   by luck (``need`` of ``tries`` is a small sample, and each step makes
   the anomaly rarer) fails here, and the one kept before it is run
   again, back to the first that holds, or to the first candidate kept,
   which is not run again. The steps after a candidate that holds are not
   tried again from it.

Every candidate that reproduces is the best
so far and is written at once
(``shrink/minimal.yml`` and ``shrink/summary.md`` in the run's directory),
so an interrupted shrink keeps it.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from harness.reproduce import StoredRun, anomaly_kinds, evident_at, write_pinned
from harness.runner import Origin, RunEndedBadly, RunResult, run_test
from harness.spec import TestSpec
from nemesis.package import KINDS
from nemesis.plan import FaultPlan, load, subset

T = TypeVar("T")
#: the shortest time limit a candidate gets, and the slack after its last
#: fault and after the stored run's anomaly showed (a replay's timing drifts)
MIN_TIME_LIMIT_S = 5.0
AFTER_LAST_FAULT_S = 5.0
AFTER_ANOMALY_S = 10.0
#: a fault is not shortened below this
MIN_DURATION_S = 1.0

log = logging.getLogger(__name__)


class Interrupted(Exception):
    """A run of the shrink was interrupted (Ctrl-C): stop, keep the best."""


def ddmin(items: Sequence[T], test: Callable[[list[T]], bool]) -> list[T]:
    """A 1-minimal subsequence of ``items`` for which ``test`` holds (Zeller
    and Hildebrandt, "Simplifying and Isolating Failure-Inducing Input"),
    assuming it holds for ``items``."""
    current, n = list(items), 2
    while len(current) >= 2:
        size = math.ceil(len(current) / n)
        chunks = [current[i : i + size] for i in range(0, len(current), size)]
        for chunk in chunks:
            if test(chunk):
                current, n = chunk, 2
                break
        else:
            for chunk in chunks:
                rest = [x for x in current if x not in chunk]
                if len(chunks) > 2 and test(rest):
                    current, n = rest, max(n - 1, 2)
                    break
            else:
                if n >= len(current):
                    break
                n = min(len(current), 2 * n)
    return current


@dataclass(frozen=True)
class Candidate:
    plan: FaultPlan
    time_limit: float
    key_count: int
    concurrency: int

    def describe(self) -> str:
        return (
            f"{len(self.plan.faults)} fault(s), {self.time_limit:g} s, "
            f"{self.key_count} key(s), {self.concurrency} client(s)"
        )

    def key(self) -> str:
        return f"{self.plan.to_yaml()}|{float(self.time_limit)}|{self.key_count}|{self.concurrency}"

    @property
    def fewest_keys(self) -> int:
        """The fewest keys its targets allow: one past the highest key they
        name (the leader of key K, a partition of key K)."""
        named = [
            int(t.get("leader-of-key", t.get("key", -1)))
            for t in (f.target for f in self.plan.faults)
            if isinstance(t, dict)
        ]
        return max([1, *(k + 1 for k in named)])

    def with_time_limit(self, limit: float) -> Candidate:
        """Cut to ``limit`` seconds: faults starting later are dropped."""
        kept = tuple(f for f in self.plan.faults if f.at < limit)
        return replace(self, plan=FaultPlan(kept), time_limit=limit)

    def cut_after_last_fault(self) -> Candidate:
        last = max((f.end for f in self.plan.faults), default=0.0)
        return self.cut_at(last + AFTER_LAST_FAULT_S)

    def cut_at(self, seconds: float) -> Candidate:
        """Cut to ``seconds`` rounded up (at least ``MIN_TIME_LIMIT_S``), if shorter."""
        limit = max(MIN_TIME_LIMIT_S, math.ceil(seconds))
        return self.with_time_limit(min(limit, self.time_limit))


def shrink(
    start: Candidate,
    reproduces: Callable[[Candidate], bool],
    shown_at: float | None = None,
    confirms: Callable[[Candidate], bool] | None = None,
) -> Candidate | None:
    """The smallest candidate found from ``start`` by the steps above, or
    None when none of its first candidates reproduces; ``shown_at`` is when
    the stored run's anomaly showed, ``reproduces`` is called once per
    candidate tried, and ``confirms`` (step 7, skipped when None) runs a
    candidate that reproduced once more."""
    prefix = start if shown_at is None else start.cut_at(shown_at + AFTER_ANOMALY_S)
    firsts = [replace(prefix, plan=FaultPlan()), prefix, replace(start, plan=FaultPlan()), start]
    best = next((c for i, c in enumerate(firsts) if c not in firsts[:i] and reproduces(c)), None)
    if best is None:
        return None
    accepted = [best]

    def attempt(candidate: Candidate) -> bool:
        nonlocal best
        if candidate == best or not reproduces(candidate):
            return False
        best = candidate
        accepted.append(candidate)
        return True

    attempt(best.cut_after_last_fault())
    if len(best.plan.faults) > 1:
        base = best
        ddmin(
            list(range(len(base.plan.faults))),
            lambda keep: attempt(replace(base, plan=subset(base.plan, keep))),
        )
    for i in range(len(best.plan.faults)):
        while (d := best.plan.faults[i].duration) is not None and d / 2 >= MIN_DURATION_S:
            faults = list(best.plan.faults)
            faults[i] = replace(faults[i], duration=round(d / 2, 3))
            if not attempt(replace(best, plan=FaultPlan(tuple(faults)))):
                break
    attempt(best.cut_after_last_fault())
    while best.key_count // 2 >= best.fewest_keys and attempt(
        replace(best, key_count=best.key_count // 2)
    ):
        pass
    while best.concurrency > 1 and attempt(replace(best, concurrency=best.concurrency // 2)):
        pass
    if confirms is not None:
        while len(accepted) > 1 and not confirms(accepted[-1]):
            accepted.pop()
            reproduces(accepted[-1])  # known already: kept at once, should Ctrl-C come
        best = accepted[-1]
        reproduces(best)  # known already: kept with the confirming runs counted
    return best


@dataclass
class Trial:
    """The runs of one candidate."""

    candidate: Candidate
    schedule: Path
    reproduced: int = 0
    runs: list[Path] = field(default_factory=list)
    #: runs of a candidate that reproduced, run again to confirm it
    confirming: bool = False


RunOne = Callable[[TestSpec, Origin], RunResult]


@dataclass
class Shrinker:
    """Runs candidates of a stored run and keeps the smallest that reproduces."""

    run: StoredRun
    kinds: set[str]
    tries: int = 3
    need: int = 2
    run_one: RunOne = field(default=lambda spec, origin: run_test(spec, origin=origin))
    on_trial: Callable[[Trial, bool], None] = lambda trial, best: None
    directory: Path = field(init=False)
    started: float = field(default_factory=time.monotonic)
    trials: dict[str, Trial] = field(default_factory=dict)
    best: Trial | None = None
    total_runs: int = 0

    def __post_init__(self) -> None:
        self.directory = self.run.path / "shrink"
        self.directory.mkdir(parents=True, exist_ok=True)

    def shown_at(self) -> float | None:
        """When the stored run's anomaly showed (s), if its results say."""
        return evident_at(self.run.results or {}, self.kinds)

    def start(self) -> Candidate:
        pinned = load(write_pinned(self.run, self.directory, "original.yml"), KINDS)
        spec = self.run.spec
        return Candidate(pinned, spec.time_limit, spec.key_count, spec.concurrency)

    def spec(self, candidate: Candidate, schedule: Path) -> TestSpec:
        return self.run.spec_for(
            schedule,
            f"{self.run.spec.test_name}-shrink",
            time_limit=candidate.time_limit,
            key_count=candidate.key_count,
            concurrency=candidate.concurrency,
        )

    def reproduces(self, candidate: Candidate) -> bool:
        """Runs ``candidate`` until ``need`` runs showed the anomaly or too
        few runs are left for that; raises Interrupted on Ctrl-C."""
        trial = self.trials.get(candidate.key())
        if trial is None:
            schedule = self.directory / f"candidate-{len(self.trials):03}.yml"
            trial = self.trial(candidate, candidate.plan.write(schedule))
            self.trials[candidate.key()] = trial
            self.on_trial(trial, trial.reproduced >= self.need)
        if trial.reproduced < self.need:
            return False
        self.best = trial
        self.save(trial.schedule)
        return True

    def confirms(self, candidate: Candidate) -> bool:
        """Runs ``candidate``, which reproduced, again (up to ``tries`` runs);
        when ``need`` of them show the anomaly, their runs count with the
        first ones."""
        first = self.trials[candidate.key()]
        again = self.trial(candidate, first.schedule, confirming=True)
        held = again.reproduced >= self.need
        self.on_trial(again, held)
        if held:
            first.reproduced += again.reproduced
            first.runs += again.runs
        return held

    def trial(self, candidate: Candidate, schedule: Path, confirming: bool = False) -> Trial:
        """Runs ``candidate``, stopping once the answer is known."""
        trial = Trial(candidate, schedule, confirming=confirming)
        spec = self.spec(candidate, schedule)
        for n in range(self.tries):
            if trial.reproduced >= self.need or trial.reproduced + self.tries - n < self.need:
                break
            self.total_runs += 1
            try:
                result = self.run_one(spec, Origin("shrink", self.run.path))
            except RunEndedBadly as e:  # no verdict: a run that did not show it
                log.warning("%s", e)
                continue
            if result.outcome is not None and result.outcome.interrupted:
                raise Interrupted
            trial.runs.append(result.run_dir.path)
            trial.reproduced += bool(anomaly_kinds(result.results) & self.kinds)
        return trial

    def save(self, schedule: Path) -> None:
        (self.directory / "minimal.yml").write_text(schedule.read_text())
        (self.directory / "summary.md").write_text("\n".join(self.summary()) + "\n")

    def command(self) -> str:
        if self.best is None:
            return self.run.spec.command()
        return self.spec(self.best.candidate, self.directory / "minimal.yml").command()

    def summary(self) -> list[str]:
        """What the shrink found: the faults left, the anomaly, how often it
        came back, and the command that reproduces it."""
        spec = self.run.spec
        before = len(self.run.plan.faults)
        lines = [f"# Shrinking {self.run.path}", ""]
        lines.append(f"- anomaly: {', '.join(sorted(self.kinds))}")
        if self.best is None:
            lines.append("- nothing reproduced yet")
            return lines
        best = self.best.candidate
        lines += [
            f"- faults: {before} → {len(best.plan.faults)}",
            f"- time limit: {spec.time_limit:g} → {best.time_limit:g} s; keys: "
            f"{spec.key_count} → {best.key_count}; clients: {spec.concurrency} → "
            f"{best.concurrency}",
            f"- reproduced in {self.best.reproduced} of {len(self.best.runs)} runs "
            f"(a candidate counts when {self.need} of {self.tries} runs show the anomaly)",
            f"- {self.total_runs} runs in {time.monotonic() - self.started:.0f} s",
            "",
            "Faults left:",
            "",
        ]
        lines += [
            f"- at {f.at:g} s: {f.fault} {f.target!r}"
            + (f" for {f.duration:g} s" if f.duration is not None else "")
            for f in best.plan.faults
        ] or ["- none"]
        lines += ["", "Reproduce it:", "", f"    {self.command()}"]
        return lines
