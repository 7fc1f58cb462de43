"""The group workload's generator, replayed without a cluster: members join
first, poll long enough for rebalances, and re-subscribe only now and then."""

from __future__ import annotations

import generator as g
from generator.simulate import invocations, simulate
from harness.spec import resolve
from workloads.group import POLL_MS
from workloads.workload import build


def ops(seed: int) -> list[dict]:
    spec = resolve(None, {"workload": "group", "concurrency": 3, "key_count": 4, "seed": seed})
    w = build(spec.workload_options(), "unused:9092")
    return invocations(simulate(g.on_clients(g.limit(640, w.generator)), concurrency=3))


def test_members_subscribe_first_then_poll_long_and_rarely_churn() -> None:
    h = ops(1)
    first = {}
    for o in h:
        first.setdefault(o["process"], o)
    assert all(o["f"] == "subscribe" and o["value"] == [0, 1, 2, 3] for o in first.values())
    polls = [o for o in h if o["f"] == "poll"]
    assert polls and all(o["poll_ms"] == POLL_MS for o in polls)
    assert all("poll_ms" not in o for o in h if o["f"] != "poll")
    churn = [o for o in h if o["f"] == "subscribe" and o not in first.values()]
    assert 1 <= len(churn) <= 640 / 16  # about 1 op in 64
    assert {o["f"] for o in h} == {"subscribe", "send", "poll"}


def test_same_seed_same_ops() -> None:
    strip = [[(o["f"], o["value"]) for o in ops(s)] for s in (4, 4, 5)]
    assert strip[0] == strip[1] != strip[2]
