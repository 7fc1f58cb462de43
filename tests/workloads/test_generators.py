"""Workload generators, replayed without a cluster."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import generator as g
from generator.simulate import invocations, simulate
from workloads.generators import (
    END_STABLE_S,
    AssignNewProcesses,
    OffsetTracker,
    QueueOps,
    final_polls,
    track_offsets,
)
from workloads.keys import KeyMap, all_keys

KEYS = (0, 1, 2, 3)


def test_keys_map_one_to_one() -> None:
    keys = KeyMap()
    for k in range(50):
        assert keys.key_of(*keys.topic_partition(k)) == k
    assert keys.topic_partition(5) == ("jepka-t2", 1)
    assert keys.topics([0, 1, 5]) == ["jepka-t0", "jepka-t2"]
    assert all_keys(5) == [0, 1, 2, 3, 4, 5]
    assert keys.key_map(2) == {"0": ["jepka-t0", 0], "1": ["jepka-t0", 1]}


def test_a_run_of_its_own_names_its_own_topics() -> None:
    own = KeyMap("jepka-1a2b3c4d-t")
    assert own.topic_partition(5) == ("jepka-1a2b3c4d-t2", 1)
    assert own.key_of("jepka-1a2b3c4d-t2", 1) == 5
    with pytest.raises(ValueError, match="not a jepka key"):
        own.key_of("jepka-t2", 1)  # an earlier run's topic is not this run's key


def test_foreign_topic_is_rejected() -> None:
    with pytest.raises(ValueError, match="not a jepka key"):
        KeyMap().key_of("orders", 0)


def ops_for(seed: int, n: int = 400, **kw: object) -> list[dict]:
    gen = g.limit(n, QueueOps(KEYS, g.Rand(seed), **kw))  # type: ignore[arg-type]
    return invocations(simulate(g.on_clients(gen), concurrency=3, latency=5))


def test_values_are_unique_per_key() -> None:
    ops = ops_for(1, max_len=4, txn=True)
    sent = [(m[1], m[2]) for o in ops for m in o["value"] if m[0] == "send"]
    assert len(sent) == len(set(sent)) > 100
    per_key = Counter(k for k, _ in sent)
    assert set(per_key) == set(KEYS)


def test_single_mop_queue_ops_are_tagged() -> None:
    ops = ops_for(2)
    assert {o["f"] for o in ops} == {"send", "poll"}
    assert all(len(o["value"]) == 1 for o in ops)


def test_plain_ops_never_mix_sends_and_polls() -> None:
    ops = ops_for(6, max_len=4)
    assert {o["f"] for o in ops} == {"send", "poll"}
    assert all(len(o["value"]) == 1 for o in ops if o["f"] == "poll")
    assert max(len(o["value"]) for o in ops if o["f"] == "send") == 4


def test_txn_ops_mix_and_abort_at_the_chance_per_transaction() -> None:
    ops = ops_for(3, n=2000, max_len=4, txn=True, abort_p=0.1)
    assert Counter(o["f"] for o in ops).keys() == {"send", "poll", "txn"}
    aborts = [o for o in ops if "abort" in o]
    # a tenth of transactions, whatever their length, each running all its micro-ops
    assert 0.08 < len(aborts) / len(ops) < 0.12
    assert all(o["abort"] is True for o in aborts)
    assert {len(o["value"]) for o in aborts} == {1, 2, 3, 4}


def test_resubscribes_pick_random_nonempty_key_sets() -> None:
    ops = ops_for(4, sub_p=0.2, sub_via=("assign", "subscribe"))
    re = [o for o in ops if o["f"] in ("assign", "subscribe")]
    assert {o["f"] for o in re} == {"assign", "subscribe"}
    assert all(o["value"] and set(o["value"]) <= set(KEYS) for o in re)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**40))
def test_schedule_depends_only_on_the_seed(seed: int) -> None:
    """Different thread counts and latencies, same sequence of random ops."""

    def schedule(concurrency: int, latency: int) -> list:
        ops = g.limit(80, QueueOps(KEYS, g.Rand(seed), max_len=3))
        gen = g.on_clients(AssignNewProcesses(ops, list(KEYS), "assign"))
        h = simulate(gen, concurrency=concurrency, latency=latency)
        return [(o["f"], o["value"]) for o in invocations(h) if o["f"] != "assign"]

    assert schedule(1, 3) == schedule(5, 17)


def test_new_processes_are_assigned_every_key_first() -> None:
    def complete(op: dict) -> dict:
        return {**op, "type": "info" if op["f"] == "send" else "ok"}

    gen = g.on_clients(
        g.limit(30, AssignNewProcesses(QueueOps(KEYS, g.Rand(5)), list(KEYS), "assign"))
    )
    h = invocations(simulate(gen, concurrency=2, complete=complete))
    first = {}
    for o in h:
        first.setdefault(o["process"], o)
    assert all(o["f"] == "assign" and o["value"] == list(KEYS) for o in first.values())
    assert len(first) > 2  # info sends moved threads to new processes


def test_a_key_that_had_its_writes_gives_way_to_a_fresh_one() -> None:
    """Elle's key rotation: at most ``max_writes`` writes per key, values 1
    upwards, and a retired key replaced by one past the highest so far."""
    ops = ops_for(3, n=600, max_len=4, txn=True, max_writes=5)
    sent = [(m[1], m[2]) for o in ops for m in o["value"] if m[0] == "send"]
    per_key: dict[int, list[int]] = {}
    for k, v in sent:
        per_key.setdefault(k, []).append(v)
    assert len(per_key) > 40
    assert sorted(per_key) == list(range(len(per_key)))
    assert all(vs == list(range(1, len(vs) + 1)) for vs in per_key.values())
    short = [k for k, vs in per_key.items() if len(vs) < 5]
    assert max(len(vs) for vs in per_key.values()) == 5
    assert len(short) <= len(KEYS)  # only the pool in use at the end is short
    resubs = [o for o in ops_for(3, n=600, sub_p=0.2, max_writes=5) if o["f"] == "assign"]
    assert max(max(o["value"]) for o in resubs) > max(KEYS)  # re-assigns take fresh keys


def test_new_processes_are_assigned_the_keys_written_now() -> None:
    def complete(op: dict) -> dict:
        return {**op, "type": "info" if op["f"] == "send" else "ok"}

    ops = QueueOps(KEYS, g.Rand(5), max_writes=2)
    gen = g.on_clients(g.limit(60, AssignNewProcesses(ops, None, "assign")))
    h = invocations(simulate(gen, concurrency=2, complete=complete))
    pool = set(KEYS)
    for o in h:
        if o["f"] == "assign":
            assert set(o["value"]) == pool  # the keys in use when it came
        for _, k, v in (m for m in o["value"] if o["f"] == "send"):
            if v == 2:  # its last write: one past the highest takes its place
                pool = pool - {k} | {max(pool) + 1}
    assert max(max(o["value"]) for o in h if o["f"] == "assign") > max(KEYS)


def test_final_polls_read_until_every_process_caught_up() -> None:
    tracker = OffsetTracker()
    log: dict = {k: [] for k in KEYS}

    def broker(op: dict) -> dict:
        if op["f"] == "send":
            k, v = op["value"][0][1], op["value"][0][2]
            log[k].append(v)
            return {**op, "type": "ok", "value": [["send", k, [len(log[k]) - 1, v]]]}
        return {**op, "type": "ok"}

    main = track_offsets(g.limit(40, g.repeat({"f": "send", "value": [["send", 1, 7]]})), tracker)
    simulate(g.on_clients(main), concurrency=2, complete=broker)
    assert tracker.highest == {1: 39}

    position: dict = {}

    def reader(op: dict) -> dict:
        if op["f"] == "assign":
            position[op["process"]] = 0
            return {**op, "type": "ok"}
        start = position[op["process"]]
        recs = [[o, 7] for o in range(start, min(start + 15, 40))]
        position[op["process"]] = start + len(recs)
        return {**op, "type": "ok", "value": [["poll", {1: recs}]]}

    h = invocations(
        simulate(g.on_clients(final_polls(list(KEYS), tracker)), concurrency=2, complete=reader)
    )
    per_process = Counter((o["process"], o["f"]) for o in h)
    assert per_process == {(0, "assign"): 1, (0, "poll"): 3, (1, "assign"): 1, (1, "poll"): 3}
    assert all(o.get("seek_to_beginning") for o in h if o["f"] == "assign")


def test_the_tracker_learns_from_client_ops_not_from_the_final_reads() -> None:
    tracker = OffsetTracker()
    sent = {"process": 0, "type": "ok", "f": "send", "value": [["send", 1, [4, 9]]]}
    polled = {"process": 1, "type": "ok", "f": "poll", "value": [["poll", {2: [[6, 3]]}]]}
    final = {**polled, "final": True, "value": [["poll", {1: [[8, 9]], 3: [[2, 1]]}]]}
    nemesis = {"process": "nemesis", "type": "info", "f": "kill", "value": [["send", 5, 1]]}
    for event in (sent, polled, final, {**nemesis, "type": "invoke"}, nemesis):
        tracker.observe(event)
    assert tracker.highest == {1: 4, 2: 6}
    assert tracker.sent_to == set()  # only invocations name the keys sent to
    tracker.observe({**sent, "type": "invoke", "value": [["send", 7, 1]]})
    assert tracker.sent_to == {7}


def test_final_reads_assign_the_keys_sent_to_besides_those_given() -> None:
    tracker = OffsetTracker()
    main = track_offsets(g.limit(4, g.repeat({"f": "send", "value": [["send", 9, 1]]})), tracker)
    simulate(g.on_clients(main), concurrency=1, complete=lambda op: {**op, "type": "info"})
    assert tracker.sent_to == {9} and tracker.highest == {}  # none known written
    final = g.on_clients(g.limit(1, final_polls([0, 1], tracker)))
    [assign] = invocations(simulate(final, concurrency=1))
    assert assign["f"] == "assign" and assign["value"] == [0, 1, 9]


def final_reads(tracker: OffsetTracker, log: int, end: int, high: int) -> list[dict]:
    """The final reads of one process over key 1, for at most 60 s: the log
    holds readable records below ``log``; a consumer past them reports the
    partition's ``end`` and ``high`` watermark; each poll takes a second."""
    position = {}

    def reader(op: dict) -> dict:
        done = {**op, "type": "ok", "time": op["time"] + 10**9}
        if op["f"] == "assign":
            position[op["process"]] = 0
            return done
        start = position[op["process"]]
        recs = [[o, 7] for o in range(start, min(start + 15, log))]
        position[op["process"]] = start + len(recs)
        ends = {"1": [end, high]} if position[op["process"]] == log else {}
        return {**done, "value": [["poll", {1: recs}]], "ends": ends}

    gen = g.on_clients(g.time_limit(60, final_polls([1], tracker)))
    history = invocations(simulate(gen, concurrency=1, complete=reader))
    return [o for o in history if o["f"] == "poll"]


def tracking(target: int) -> OffsetTracker:
    tracker = OffsetTracker()
    tracker.highest = {1: target}
    return tracker


def test_final_reads_end_at_an_end_past_the_target() -> None:
    # offset 40 holds no record a read_committed consumer gets; the end is past it
    assert len(final_reads(tracking(40), log=40, end=42, high=42)) == 3


def test_final_reads_of_a_log_that_lost_the_target_stop_once_its_end_holds() -> None:
    polls = final_reads(tracking(45), log=40, end=40, high=40)  # acknowledged, then lost
    first_end = polls[2]["time"] + 10**9
    assert polls[-1]["time"] - first_end < END_STABLE_S * 1e9
    assert (polls[-1]["time"] + 10**9) - first_end >= END_STABLE_S * 1e9
    assert len(polls) == 3 + END_STABLE_S  # one poll a second until the end held


def test_final_reads_wait_for_a_transaction_still_open_below_the_target() -> None:
    # the last stable offset (40) holds below records up to 50: an open
    # transaction, not a loss; read a poll a second after the assign until
    # the time limit
    assert len(final_reads(tracking(45), log=40, end=40, high=50)) == 59
