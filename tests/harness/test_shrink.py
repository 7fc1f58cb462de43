"""Replay and shrink against a simulated system (no cluster): the bug shows
only when certain faults run together, with enough keys; the search must
find exactly that and keep it on disk."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from harness.interpreter import Outcome
from harness.reproduce import StoredRun, evident_at, replay
from harness.runner import Origin, RunEndedBadly, RunResult
from harness.shrink import Candidate, Interrupted, Shrinker, Trial, ddmin, shrink
from harness.spec import TestSpec as Spec
from harness.spec import load_schedule, resolve
from harness.store import RunDir
from nemesis.plan import FaultPlan, PlannedFault


def test_ddmin_finds_the_one_minimal_subset() -> None:
    calls: list[list[int]] = []

    def fails(items: list[int]) -> bool:
        calls.append(items)
        return {3, 11} <= set(items)

    assert ddmin(list(range(16)), fails) == [3, 11]
    assert len(calls) < 64  # of 65,536 subsets
    assert ddmin([1, 2, 3], lambda items: True) == [1]


def fault(at: float, name: str, node: str, duration: float | None = 4.0) -> PlannedFault:
    done = {"kill": "killed", "pause": "paused"}[name]
    return PlannedFault(at, name, "one", duration, {done: [node]})


#: the stored run's faults; the bug needs n2 killed and n3 paused, in any order
FAULTS = (
    fault(1, "kill", "n1"),
    fault(3, "pause", "n3", 6),
    fault(8, "kill", "n2", 12),
    fault(12, "pause", "n1"),
    fault(20, "kill", "n3"),
    fault(31, "pause", "n2", None),
)


class System:
    """Runs a spec the way the bug behaves: lost-write when n2 is killed and
    n3 paused and the test has at least two keys; every ``flaky``-th run
    misses it, and the first ``lucky`` runs with those faults and one key
    show it anyway."""

    def __init__(self, root: Path, flaky: int = 0, lucky: int = 0) -> None:
        self.root, self.flaky, self.lucky, self.runs = root, flaky, lucky, 0
        self.specs: list[Spec] = []
        self.origins: list[Origin] = []

    def __call__(self, spec: Spec, origin: Origin) -> RunResult:
        self.runs += 1
        self.specs.append(spec)
        self.origins.append(origin)
        plan = load_schedule(spec.schedule)
        hit = {(f.fault, tuple(f.target)) for f in plan.faults if f.at < spec.time_limit}
        bug = {("kill", ("n2",)), ("pause", ("n3",))} <= hit
        if bug and spec.key_count == 1 and self.lucky:
            self.lucky -= 1
        else:
            bug = bug and spec.key_count >= 2
        if self.flaky and self.runs % self.flaky == 0:
            bug = False
        results = {"valid": not bug, "anomalies": {"lost-write": [{"key": 1}]} if bug else {}}
        run_dir = RunDir.create(self.root, spec.test_name)
        return RunResult(run_dir, results, Outcome(10, False, 0))


@pytest.fixture
def stored(tmp_path: Path) -> StoredRun:
    spec = resolve(None, {"nemesis": "kill,pause", "time_limit": 40, "store": str(tmp_path)})
    run_dir = RunDir.create(tmp_path, spec.test_name)
    run_dir.save_test({"name": spec.test_name, "spec": spec.to_dict()})
    run_dir.save_results({"valid": False, "anomalies": {"lost-write": [{}], "unseen": []}})
    FaultPlan(FAULTS).write(run_dir.path / "faults.yml")
    return StoredRun.load(run_dir.path)


def test_replay_runs_the_same_faults_on_the_same_nodes(stored: StoredRun, tmp_path: Path) -> None:
    system = System(tmp_path / "replays", flaky=3)
    done = replay(stored, 3, system)
    assert stored.kinds == {"lost-write"}  # unseen has no instance
    assert done.came_back(["lost-write"]) == 2
    assert done.summary()[0] == "lost-write: came back in 2 of 3 replays"
    spec = system.specs[0]
    assert spec.seed == stored.spec.seed and spec.nemesis == ("kill", "pause")
    assert spec.test_name == "queue-kill+pause-replay"
    plan = load_schedule(spec.schedule)
    assert [f.target for f in plan.faults] == [["n1"], ["n3"], ["n2"], ["n1"], ["n3"], ["n2"]]
    assert [f.duration for f in plan.faults] == [f.duration for f in FAULTS]
    assert system.origins[0] == Origin("replay", stored.path)


def test_shrink_keeps_the_two_faults_and_the_smallest_test(
    stored: StoredRun, tmp_path: Path
) -> None:
    system = System(tmp_path / "runs")
    shrinker = Shrinker(stored, {"lost-write"}, tries=3, need=2, run_one=system)
    best = shrink(shrinker.start(), shrinker.reproduces)
    assert best is not None and shrinker.best is not None
    assert best == shrinker.best.candidate
    assert [(f.fault, f.target) for f in best.plan.faults] == [
        ("pause", ["n3"]),
        ("kill", ["n2"]),
    ]
    assert [f.duration for f in best.plan.faults] == [1.5, 1.5]  # halved down to >= 1 s
    assert best.time_limit == 15  # just after the last fault: 8 + 1.5 + 5, rounded up
    assert (best.key_count, best.concurrency) == (2, 1)
    assert load_schedule(str(shrinker.directory / "minimal.yml")) == best.plan
    summary = (shrinker.directory / "summary.md").read_text()
    assert "faults: 6 → 2" in summary and "reproduced in 2 of 2 runs" in summary
    command = shrinker.command()
    assert "--schedule" in command and "--key-count 2" in command
    assert "--time-limit 15" in command and "--concurrency 1" in command
    assert all(origin.kind == "shrink" for origin in system.origins)
    assert system.runs == shrinker.total_runs < 80


def test_a_candidate_that_passed_by_luck_is_confirmed_away(
    stored: StoredRun, tmp_path: Path
) -> None:
    """One key passes 2 of 2 runs by luck, then never again: run once more,
    it fails, and the shrink keeps the two keys before it."""
    system = System(tmp_path / "runs", lucky=2)
    seen: list[tuple[int, bool, bool]] = []
    shrinker = Shrinker(
        stored,
        {"lost-write"},
        tries=3,
        need=2,
        run_one=system,
        on_trial=lambda t, ok: seen.append((t.candidate.key_count, t.confirming, ok)),
    )
    best = shrink(shrinker.start(), shrinker.reproduces, confirms=shrinker.confirms)
    # the clients were halved from the lucky candidate only: not tried again
    assert best is not None and (best.key_count, best.concurrency) == (2, 5)
    assert shrinker.best is not None and shrinker.best.candidate == best
    assert [s for s in seen if s[1]] == [(1, True, False), (2, True, True)]
    summary = (shrinker.directory / "summary.md").read_text()
    assert "keys: 8 → 2" in summary and "reproduced in 4 of 4 runs" in summary
    assert "--key-count 2" in shrinker.command()
    assert load_schedule(str(shrinker.directory / "minimal.yml")) == best.plan


def test_ctrl_c_while_falling_back_keeps_the_candidate_before(
    stored: StoredRun, tmp_path: Path
) -> None:
    system = System(tmp_path / "runs", lucky=2)
    failed: list[Trial] = []

    def run_one(spec: Spec, origin: Origin) -> RunResult:
        result = system(spec, origin)
        if failed:  # Ctrl-C in the first run after a confirmation failed
            result.outcome = Outcome(1, True, 0)
        return result

    def on_trial(trial: Trial, held: bool) -> None:
        if trial.confirming and not held:
            failed.append(trial)

    shrinker = Shrinker(stored, {"lost-write"}, 3, 2, run_one, on_trial)
    with pytest.raises(Interrupted):
        shrink(shrinker.start(), shrinker.reproduces, confirms=shrinker.confirms)
    assert shrinker.best is not None and shrinker.best.candidate.key_count == 2
    assert "keys: 8 → 2" in (shrinker.directory / "summary.md").read_text()


def test_the_first_runs_are_cut_soon_after_the_anomaly_showed(
    stored: StoredRun, tmp_path: Path
) -> None:
    lost = {"writer": {"time": 2_000_000_000}, "max_read": {"time": 13_600_000_000}}
    run = replace(stored, results={"valid": False, "anomalies": {"lost-write": [lost]}})
    system = System(tmp_path / "runs")
    shrinker = Shrinker(run, {"lost-write"}, tries=3, need=2, run_one=system)
    assert shrinker.shown_at() == 13.6
    best = shrink(shrinker.start(), shrinker.reproduces, shrinker.shown_at())
    first = [(s.time_limit, len(load_schedule(s.schedule).faults)) for s in system.specs[:4]]
    # no faults (two misses end it), then the five faults started by 24 s
    assert first == [(24, 0), (24, 0), (24, 5), (24, 5)]
    assert best is not None and best.time_limit == 15 and len(best.plan.faults) == 2


def test_a_bug_that_needs_no_faults_but_time_is_shrunk_to_no_faults(
    stored: StoredRun, tmp_path: Path
) -> None:
    """The cut came too early (a guess from the instance's ops): the whole
    run without faults is tried before the stored faults."""
    early = {"ops": [{"time": 5_000_000_000}]}
    run = replace(stored, results={"valid": False, "anomalies": {"lost-write": [early]}})
    specs: list[Spec] = []

    def late_bug(spec: Spec, origin: Origin) -> RunResult:
        specs.append(spec)
        bug = spec.time_limit >= 30
        results = {"valid": not bug, "anomalies": {"lost-write": [{"key": 1}]} if bug else {}}
        return RunResult(RunDir.create(tmp_path / "runs", spec.test_name), results, None)

    shrinker = Shrinker(run, {"lost-write"}, tries=3, need=2, run_one=late_bug)
    best = shrink(shrinker.start(), shrinker.reproduces, shrinker.shown_at())
    assert best is not None and best.plan.faults == ()
    assert [(s.time_limit, len(load_schedule(s.schedule).faults)) for s in specs[:6]] == [
        (15, 0),
        (15, 0),
        (15, 4),
        (15, 4),
        (40, 0),
        (40, 0),
    ]


def test_an_anomaly_shows_when_its_checker_says_else_with_its_latest_op() -> None:
    read = {"ops": [{"time": 5_000_000_000}, {"time": 44_700_000_000}]}
    later = {"ops": [{"time": 1_000_000_000}, {"time": 60_000_000_000}]}
    unseen = {"messages": [{"writer": {"time": 3_100_000_000}}]}  # shows at the end
    results = {"anomalies": {"inconsistent-offsets": [later, read], "unseen": [unseen]}}
    assert evident_at(results, {"inconsistent-offsets", "unseen"}) == 44.7
    told = {**later, "evident": 30_200_000_000}
    results = {"anomalies": {"inconsistent-offsets": [told, read]}}
    assert evident_at(results, {"inconsistent-offsets"}) == 30.2
    assert evident_at(results, {"unseen"}) is None
    assert evident_at({}, {"lost-write"}) is None


def test_a_run_that_does_not_come_back_is_not_shrunk(stored: StoredRun, tmp_path: Path) -> None:
    never = System(tmp_path / "runs", flaky=1)
    shrinker = Shrinker(stored, {"lost-write"}, tries=3, need=2, run_one=never)
    assert shrink(shrinker.start(), shrinker.reproduces) is None
    assert never.runs == 4  # two candidates, each stopped once two misses made it hopeless
    assert "nothing reproduced" in "\n".join(shrinker.summary())


def test_an_interrupted_shrink_keeps_the_best_so_far(stored: StoredRun, tmp_path: Path) -> None:
    system = System(tmp_path / "runs")

    def interrupt_after(n: int) -> Any:
        def run_one(spec: Spec, origin: Origin) -> RunResult:
            result = system(spec, origin)
            if system.runs > n:
                result.outcome = Outcome(1, True, 0)
            return result

        return run_one

    shrinker = Shrinker(stored, {"lost-write"}, tries=1, need=1, run_one=interrupt_after(4))
    with pytest.raises(Interrupted):
        shrink(shrinker.start(), shrinker.reproduces)
    assert shrinker.best is not None
    kept = load_schedule(str(shrinker.directory / "minimal.yml"))
    assert kept == shrinker.best.candidate.plan and len(kept.faults) < len(FAULTS)


def test_a_candidate_cut_short_drops_the_faults_after_its_end() -> None:
    plan = FaultPlan(FAULTS)
    cut = Candidate(plan, 40, 8, 5).with_time_limit(10)
    assert [f.at for f in cut.plan.faults] == [1, 3, 8]
    assert Candidate(FaultPlan(), 40, 8, 5).cut_after_last_fault().time_limit == 5
    assert cut.describe() == "3 fault(s), 10 s, 8 key(s), 5 client(s)"
    assert Candidate(plan, 10, 8, 5).key() == Candidate(plan, 10.0, 8, 5).key()


def test_keys_are_not_halved_below_a_key_a_target_names() -> None:
    leader = PlannedFault(1, "kill", {"leader-of-key": 5}, 2.0)
    cut = PlannedFault(1, "partition", {"kind": "isolate-leader", "key": 2}, 2.0)
    assert Candidate(FaultPlan((leader, cut)), 10, 8, 5).fewest_keys == 6
    assert Candidate(FaultPlan(FAULTS), 10, 8, 5).fewest_keys == 1


def test_a_replay_of_a_scheduled_run_needs_not_its_schedule_file(
    stored: StoredRun, tmp_path: Path
) -> None:
    system = System(tmp_path / "runs")
    first = replay(stored, 1, system)
    run = system.specs[0]
    assert run.schedule  # the replay ran a schedule file...
    scheduled = first.runs[0][0]
    (scheduled / "test.json").write_text(
        json.dumps({"spec": run.to_dict()})  # ...and stored it, as run_test does
    )
    FaultPlan(FAULTS[:2]).write(scheduled / "faults.yml")
    Path(run.schedule).unlink()
    again = StoredRun.load(scheduled)
    assert again.spec.schedule == "" and len(again.plan.faults) == 2


def test_ctrl_c_ends_a_replay_and_its_run_does_not_count(stored: StoredRun, tmp_path: Path) -> None:
    system = System(tmp_path / "runs")

    def interrupted_second(spec: Spec, origin: Origin) -> RunResult:
        result = system(spec, origin)
        if system.runs == 2:
            result.outcome = Outcome(1, True, 0)
        return result

    done = replay(stored, 5, interrupted_second)
    assert system.runs == 2 and len(done.runs) == 1 and done.interrupted


def test_a_run_that_ends_badly_is_unknown_and_the_replays_and_trials_go_on(
    stored: StoredRun, tmp_path: Path
) -> None:
    """A run whose process crashed or was killed (RunEndedBadly) has no
    verdict: a replay counts it as crashed, a shrink trial as a run that did
    not show the anomaly, and both go on."""
    system = System(tmp_path / "runs")

    def second_ends_badly(spec: Spec, origin: Origin) -> RunResult:
        if system.runs == 1:
            system.runs += 1
            raise RunEndedBadly("queue (seed 0): the run ended badly: its process was stopped")
        return system(spec, origin)

    done = replay(stored, 3, second_ends_badly)
    assert [valid for _, valid, _ in done.runs] == [False, "crashed", False]
    assert done.summary()[-2] == (
        "  queue (seed 0): the run ended badly: its process was stopped: valid crashed; no anomaly"
    )
    system.runs = 0
    shrinker = Shrinker(stored, {"lost-write"}, tries=3, need=2, run_one=second_ends_badly)
    assert shrinker.reproduces(shrinker.start())
    [trial] = shrinker.trials.values()
    assert (trial.reproduced, len(trial.runs), shrinker.total_runs) == (2, 2, 3)
