"""The eos workload's generators, replayed without a cluster."""

from __future__ import annotations

import generator as g
from generator.simulate import invocations, simulate
from harness.spec import resolve
from workloads.eos import Drain, owned_keys
from workloads.workload import build


def test_each_thread_owns_a_disjoint_share_of_the_inputs() -> None:
    shares = [owned_keys([0, 1, 2, 3, 4, 5], 4, p) for p in range(4)]
    assert shares == [[0, 4], [1, 5], [2], [3]]
    assert owned_keys([0, 1], 4, 6) == owned_keys([0, 1], 4, 2) == []  # same thread
    assert owned_keys([0, 1], 4, "nemesis") == []


def test_main_phase_sends_inputs_and_copies() -> None:
    spec = resolve(None, {"workload": "eos", "concurrency": 3, "key_count": 4, "seed": 5})
    w = build(spec.workload_options(), "unused:9092")
    assert w.test_data["eos"]["outputs"] == [4, 5, 6, 7]
    h = invocations(simulate(g.on_clients(g.limit(200, w.generator)), concurrency=3, latency=9))
    assigns = {o["process"]: o["value"] for o in h if o["f"] == "assign"}
    assert assigns == {0: [0, 3], 1: [1], 2: [2]}
    sends = [tuple(o["value"][0][1:]) for o in h if o["f"] == "send"]
    assert len(sends) == len(set(sends)) and {k for k, _ in sends} == {0, 1, 2, 3}
    copies = [o for o in h if o.get("copy")]
    assert len(copies) > 50 and {o["output_shift"] for o in copies} == {4}


def test_drain_stops_after_an_empty_copy() -> None:
    polls = iter([{0: [[0, 1]]}, {0: [[1, 2]]}, {}])

    def complete(op: dict) -> dict:
        return {**op, "type": "ok", "value": [["poll", next(polls)]]}

    h = invocations(simulate(g.on_clients(Drain(4)), concurrency=1, complete=complete))
    assert len(h) == 3 and all(o["copy"] and o["output_shift"] == 4 for o in h)
