"""Generators replayed on a virtual clock (no cluster, no threads)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import generator as g
from generator.simulate import Deadlock, invocations, simulate
from generator.timing import NS_PER_S
from tests.histories import assert_invocations_paired

W = {"f": "write"}
R = {"f": "read"}


def fs(history: list[dict]) -> list[str]:
    return [o["f"] for o in invocations(history)]


def test_dict_is_one_op_on_the_lowest_free_thread() -> None:
    h = simulate({"f": "x", "value": 3}, concurrency=3)
    assert [(o["type"], o["process"], o["value"]) for o in h] == [
        ("invoke", 0, 3),
        ("ok", 0, 3),
    ]


def test_list_runs_in_order_and_indexes_are_dense() -> None:
    h = simulate([W, R, W], concurrency=1, nemesis=False, latency=5)
    assert fs(h) == ["write", "read", "write"]
    assert [o["index"] for o in h] == list(range(6))
    assert [o["time"] for o in h] == [0, 5, 5, 10, 10, 15]


def test_callable_is_called_again_when_exhausted() -> None:
    def gen(test: object, ctx: g.Context) -> dict:
        return {"f": "n", "value": ctx.time}

    h = simulate(g.limit(3, gen), concurrency=1, nemesis=False, latency=7)
    assert [o["value"] for o in invocations(h)] == [0, 7, 14]


def test_limit_repeat_and_once() -> None:
    assert fs(simulate(g.limit(5, g.repeat(W)), concurrency=2)) == ["write"] * 5
    assert fs(simulate(g.repeat(R, 3), concurrency=1)) == ["read"] * 3
    assert fs(simulate(g.once(g.repeat(W)), concurrency=4)) == ["write"]


def test_on_clients_and_on_nemesis_pick_their_threads() -> None:
    gen = g.with_nemesis(g.limit(2, g.repeat({"f": "kill"})), g.limit(6, g.repeat(W)))
    h = invocations(simulate(gen, concurrency=3, latency=10))
    assert {o["process"] for o in h if o["f"] == "kill"} == {"nemesis"}
    assert {o["process"] for o in h if o["f"] == "write"} == {0, 1, 2}
    assert Counter(o["f"] for o in h) == {"kill": 2, "write": 6}


def test_info_moves_the_thread_to_a_new_process() -> None:
    def complete(op: dict) -> dict:
        return {**op, "type": "info" if op["value"] % 2 == 0 else "ok"}

    ops = [{"f": "w", "value": i} for i in range(4)]
    h = simulate(ops, concurrency=2, nemesis=False, complete=complete)
    assert [o["process"] for o in invocations(h)] == [0, 2, 2, 4]


def test_each_thread_gives_every_thread_its_own_copy() -> None:
    h = invocations(simulate(g.each_thread([W, R]), concurrency=3, latency=1))
    per_process: dict = {}
    for o in h:
        per_process.setdefault(o["process"], []).append(o["f"])
    assert per_process == {p: ["write", "read"] for p in (0, 1, 2, "nemesis")}


def test_phases_wait_for_every_thread() -> None:
    gen = g.phases(g.limit(3, g.repeat(W)), g.once(R))
    h = simulate(gen, concurrency=3, nemesis=False, latency=10)
    read = next(o for o in h if o["f"] == "read")
    last_write_done = max(o["time"] for o in h if o["f"] == "write" and o["type"] == "ok")
    assert read["time"] >= last_write_done


def test_synchronize_pends_until_all_free() -> None:
    gen = g.any_(g.once({"f": "slow"}), g.synchronize(g.once(R)))
    h = simulate(gen, concurrency=2, nemesis=False, latency=50)
    read = next(o for o in invocations(h) if o["f"] == "read")
    assert read["time"] == 50


def test_any_takes_the_soonest_op() -> None:
    later = g.map_ops(lambda o: {**o, "time": 100}, g.once({"f": "late"}))
    h = invocations(simulate(g.any_(later, g.once({"f": "now"})), concurrency=2))
    assert fs(h) == ["now", "late"]


def test_flip_flop_alternates_and_stops_when_one_side_ends() -> None:
    h = simulate(g.flip_flop(g.repeat(W), [R, R]), concurrency=1, nemesis=False)
    assert fs(h) == ["write", "read", "write", "read", "write"]


def test_until_ok_stops_after_first_ok() -> None:
    outcomes = iter(["fail", "info", "ok", "ok"])

    def complete(op: dict) -> dict:
        return {**op, "type": next(outcomes)}

    h = simulate(g.until_ok(g.repeat(W)), concurrency=1, nemesis=False, complete=complete)
    assert [o["type"] for o in h if o["type"] != "invoke"] == ["fail", "info", "ok"]


def test_filter_and_map() -> None:
    ops = [{"f": "w", "value": i} for i in range(6)]
    gen = g.map_ops(
        lambda o: {**o, "value": o["value"] * 10}, g.filter_ops(lambda o: o["value"] % 2 == 0, ops)
    )
    assert [o["value"] for o in invocations(simulate(gen, concurrency=1))] == [0, 20, 40]


def test_mix_uses_every_child_and_replays_from_its_seed() -> None:
    def run(seed: int) -> list[str]:
        gens = [g.repeat({"f": name}) for name in "abc"]
        return fs(simulate(g.limit(300, g.mix(gens, g.Rand(seed))), concurrency=2))

    assert run(1) == run(1)
    assert run(1) != run(2)
    assert set(Counter(run(1))) == {"a", "b", "c"}
    assert min(Counter(run(1)).values()) > 60


def test_mix_drops_exhausted_children() -> None:
    gen = g.mix([g.once(W), g.limit(3, g.repeat(R))], g.Rand(7))
    assert Counter(fs(simulate(gen, concurrency=1))) == {"write": 1, "read": 3}


def test_delay_spaces_ops_exactly() -> None:
    h = invocations(simulate(g.limit(4, g.delay(0.5, g.repeat(W))), concurrency=4))
    assert [o["time"] for o in h] == [0, 500_000_000, 1_000_000_000, 1_500_000_000]


def test_stagger_is_a_total_rate_across_threads() -> None:
    gen = g.time_limit(10, g.stagger(0.01, g.repeat(W), g.Rand(3)))
    h = invocations(simulate(gen, concurrency=10, nemesis=False, latency=1_000))
    # mean interval 10 ms over 10 s: about 1000 ops whatever the thread count
    assert 850 < len(h) < 1150
    assert all(o["time"] < 10 * NS_PER_S for o in h)


def test_time_limit_cuts_off_relative_to_first_op() -> None:
    gen = [g.once({"f": "first", "time": 0}), g.time_limit(1, g.delay(0.3, g.repeat(W)))]
    h = invocations(simulate(gen, concurrency=1, nemesis=False, latency=200_000_000))
    writes = [o["time"] for o in h if o["f"] == "write"]
    assert writes[0] == 200_000_000
    assert all(t < writes[0] + 1_000_000_000 for t in writes)
    assert len(writes) == 4


def test_sleep_and_log_are_not_recorded_but_take_time() -> None:
    h = simulate(g.phases(g.once(W), g.log("hi"), g.sleep(2), g.once(R)), concurrency=2)
    assert fs(h) == ["write", "read"]
    assert next(o for o in h if o["f"] == "read")["time"] == 2_000_000_000


def test_pending_forever_is_a_deadlock() -> None:
    class Never(g.Generator):
        def op(self, test, ctx):  # type: ignore[no-untyped-def]
            return g.PENDING

    with pytest.raises(Deadlock):
        simulate(Never(), concurrency=1)


def test_bad_value_is_rejected_by_name() -> None:
    with pytest.raises(TypeError, match="cannot use int"):
        g.lift(3)  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None)
@given(
    concurrency=st.integers(1, 6),
    n=st.integers(0, 60),
    seed=st.integers(0, 2**32),
    latency=st.integers(0, 1000),
)
def test_history_is_well_formed(concurrency: int, n: int, seed: int, latency: int) -> None:
    """Every invoke has exactly one later completion from the same process, a
    process never has two ops in flight, and times never go backwards."""
    gens = [g.repeat({"f": "a"}), g.repeat({"f": "b"})]
    gen = g.with_nemesis(
        g.limit(3, g.repeat({"f": "fault"})),
        g.limit(n, g.stagger(0.000001, g.mix(gens, g.Rand(seed)), g.Rand(seed + 1))),
    )

    def complete(op: dict) -> dict:
        kind = ("ok", "fail", "info")[hash((seed, op["index"])) % 3]
        return {**op, "type": kind}

    h = simulate(gen, concurrency=concurrency, complete=complete, latency=latency)
    assert len(invocations(h)) == n + 3
    times = [o["time"] for o in h]
    assert times == sorted(times)
    assert_invocations_paired(h)


def test_timeline_plays_a_schedule_at_fixed_times() -> None:
    schedule = [(1.5, {"f": "stop"}), (0.5, {"f": "start", "value": "one"})]
    gen = g.with_nemesis(g.timeline(schedule, start=0.1), g.repeat({"f": "w"}))
    h = invocations(simulate(g.time_limit(3, gen), concurrency=1, latency=100_000_000))
    faults = [(o["f"], o["time"], o["process"]) for o in h if o["f"] != "w"]
    assert faults == [("start", 600_000_000, "nemesis"), ("stop", 1_600_000_000, "nemesis")]
    assert sum(o["f"] == "w" for o in h) == 30
