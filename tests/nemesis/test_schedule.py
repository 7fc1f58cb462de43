"""Schedules are pure and seeded: same seed, same faults, start/stop alternating."""

from __future__ import annotations

import hashlib
import json
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nemesis.base import Compose, NemesisError
from nemesis.package import build, parse_names
from nemesis.process import Kill, Pause


def by_fault(timeline: list[tuple[float, dict]], starts: set[str], stops: set[str]) -> list[str]:
    return [
        ("start" if op["f"] in starts else "stop")
        for _, op in timeline
        if op["f"] in starts | stops
    ]


@given(st.integers(0, 2**31), st.sampled_from(["alternate", "rotate", "episodes"]))
@settings(max_examples=50)
def test_same_seed_same_schedule(seed: int, mode: str) -> None:
    a = build("kill,pause,partition,clock,lose-unfsynced", seed=seed, interval=2, mode=mode)
    b = build("kill,pause,partition,clock,lose-unfsynced", seed=seed, interval=2, mode=mode)
    assert a.schedule(60) == b.schedule(60)


def test_different_seeds_differ() -> None:
    schedules = {repr(build("kill,partition", seed=s, interval=1).schedule(60)) for s in range(5)}
    assert len(schedules) == 5


@given(st.integers(0, 2**31), st.sampled_from(["alternate", "rotate", "episodes"]))
@settings(max_examples=50)
def test_each_fault_alternates_and_ends_stopped(seed: int, mode: str) -> None:
    pkg = build("kill,pause,partition", seed=seed, interval=1.5, mode=mode)
    timeline = pkg.schedule(40)
    times = [t for t, _ in timeline]
    assert times == sorted(times)
    assert all(0 <= t <= 40 for t in times)
    assert all(op["process"] == "nemesis" for _, op in timeline)
    for start, stop in (
        ("kill", "start"),
        ("pause", "resume"),
        ("start-partition", "stop-partition"),
    ):
        seq = by_fault(timeline, {start}, {stop})
        assert seq == ["start", "stop"] * (len(seq) // 2)


def on_and_off(timeline: list[tuple[float, dict]], start: str, stop: str) -> tuple[float, float]:
    """The mean seconds one fault is on, and off between a stop and the next start."""
    ops = [(t, op["f"]) for t, op in timeline if op["f"] in (start, stop)]
    on = [b - a for (a, f), (b, _) in pairwise(ops) if f == start]
    off = [b - a for (a, f), (b, _) in pairwise(ops) if f == stop]
    return sum(on) / len(on), sum(off) / len(off)


@pytest.mark.parametrize("mode", ["alternate", "rotate", "episodes"])
def test_a_fault_lasts_its_length_and_waits_the_interval(mode: str) -> None:
    long_gaps = build("kill", seed=5, interval=10, length=1, mode=mode, stable_period=400)
    on, off = on_and_off(long_gaps.schedule(20_000), "kill", "start")
    assert 0.8 < on < 1.6 < 4 < off  # episodes: 1..2 s on, 0..10 s quiet
    same = build("kill", seed=5, interval=3, mode=mode)
    assert same.schedule(300) == build("kill", seed=5, interval=3, length=3, mode=mode).schedule(
        300
    )


def test_without_a_length_every_seed_keeps_its_schedule() -> None:
    """The digest of the standard mix's schedules as drawn before faults had
    a length of their own and before the mix hit some of the leaders where
    it hit all of them: a seed still draws the same schedule."""
    digest = hashlib.sha256()
    for mode in ("alternate", "rotate", "episodes"):
        for seed in (1, 7, 2026):
            schedule = build("standard", seed=seed, interval=10, mode=mode).schedule(300)
            text = json.dumps(schedule, sort_keys=True)
            digest.update(text.replace('"some-leaders"', '"leaders"').encode())
    assert digest.hexdigest()[:16] == "ed0db3303f703418"


def test_rotate_has_quiet_windows() -> None:
    pkg = build("kill,pause", seed=3, interval=1, mode="rotate", stable_period=5)
    timeline = pkg.schedule(500)
    busy = {int(t // 5) for t, _ in timeline if t % 5}
    assert 0 < len(busy) < 100


@given(st.integers(0, 2**31))
@settings(max_examples=50)
def test_episodes_run_one_fault_at_a_time_or_two_overlapping(seed: int) -> None:
    pkg = build("kill,pause,partition", seed=seed, interval=5, mode="episodes")
    on: set[str] = set()
    most, quiet = 0, 0
    for _, op in pkg.schedule(300):
        name = {"start": "kill", "resume": "pause", "stop-partition": "start-partition"}
        if op["f"] in name:
            on.remove(name[op["f"]])
            quiet += not on
        else:
            on.add(op["f"])
            most = max(most, len(on))
    assert not on and most <= 2
    assert quiet >= 10  # every episode ends with nothing on: 300 s hold dozens


def test_episodes_overlap_now_and_then() -> None:
    """Over many seeds about a quarter of the episodes hold two faults."""
    starts = overlapping = 0
    for seed in range(200):
        on: set[str] = set()
        for _, op in build("kill,pause", seed=seed, interval=5, mode="episodes").schedule(60):
            if op["f"] in ("kill", "pause"):
                starts += 1
                overlapping += bool(on)
                on.add(op["f"])
            else:
                on.discard({"start": "kill", "resume": "pause"}[op["f"]])
    assert 0.1 < overlapping / (starts - overlapping) < 0.4


def test_partition_kinds_and_values() -> None:
    pkg = build(
        "isolate-coordinator,partition-bridge",
        seed=1,
        interval=1,
        coordinator={"transactional_id": "t1"},
    )
    kinds = {str(op["value"]) for _, op in pkg.schedule(100) if op["f"] == "start-partition"}
    assert kinds == {"bridge", "{'kind': 'isolate-coordinator', 'transactional_id': 't1'}"}


def test_final_ops_heal_everything() -> None:
    pkg = build("kill,pause,partition,clock,lose-unfsynced", seed=1)
    assert [op["f"] for op in pkg.final_ops()] == [
        "stop-partition",
        "reset-clock",
        "resume",
        "start",
    ]


def test_unknown_names_and_bad_options_are_rejected() -> None:
    with pytest.raises(NemesisError, match="unknown nemesis kil"):
        parse_names("kill,kil")
    with pytest.raises(NemesisError, match="mode"):
        build("kill", seed=1, mode="sometimes")
    with pytest.raises(NemesisError, match="positive"):
        build("kill", seed=1, interval=0)
    with pytest.raises(NemesisError, match="fault-length must be positive"):
        build("kill", seed=1, length=0)


def test_compose_rejects_overlapping_fs() -> None:
    with pytest.raises(NemesisError, match="two nemeses handle"):
        Compose([Kill(), Kill()])
    assert Compose([Kill(), Pause()]).fs == {"kill", "start", "pause", "resume"}


def test_the_standard_mix_draws_every_target_and_kind_and_overlaps() -> None:
    from nemesis.package import STANDARD_TARGETS, build

    package = build("standard", seed=0)
    assert [f.name for f in package.faults] == ["kill", "pause", "partition"]
    values: dict[str, set[str]] = {}
    overlapping = 0
    for seed in range(10):
        active: set[str] = set()
        for _, op in build("standard", seed=seed).schedule(120):
            f, value = op["f"], op["value"]
            if f in ("kill", "pause", "start-partition"):
                kind = value["kind"] if isinstance(value, dict) else value
                values.setdefault(f, set()).add(kind)
                active.add(f)
                overlapping += len(active) > 1
            else:
                active.discard({"start": "kill", "resume": "pause"}.get(f, "start-partition"))
    assert values["kill"] == values["pause"] == set(STANDARD_TARGETS)
    assert values["start-partition"] >= {
        "one",
        "majority",
        "isolate-leader",
        "isolate-controller",
        "isolate-coordinator",
        "clients",
    }
    assert overlapping > 20
