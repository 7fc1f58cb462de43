"""Dependency cycles in whole histories: each Elle kind found with its steps
explained, ww+wr cycles allowed unless --no-ww-deps, pure wr cycles failing."""

from __future__ import annotations

from typing import Any

import pytest

from checkers import check
from tests.checkers.dsl import History, poll, send
from tests.checkers.helpers import kinds_at

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def g0(h: History, x: int, p: int) -> None:
    """Two concurrent txns write x and x+1 in opposite orders."""
    y = x + 1
    a = h.invoke(p, "send", [send(x, 1, 0), send(y, 2, 1)])
    b = h.invoke(p + 1, "send", [send(x, 3, 1), send(y, 4, 0)])
    h.complete(a, "ok", [send(x, 1, 0), send(y, 2, 1)])
    h.complete(b, "ok", [send(x, 3, 1), send(y, 4, 0)])
    h.assign(p + 2, [x, y])
    h.txn(p + 2, [poll({x: [(0, 1), (1, 3)], y: [(0, 4), (1, 2)]})])


def g1c_mixed(h: History, x: int, p: int) -> None:
    """T1 writes x first; T2 writes x after T1 and y, which T1 read: ww + wr."""
    y = x + 1
    h.assign(p, [y])
    a = h.invoke(p, "txn", [send(x, 1, 0), poll({})])
    b = h.invoke(p + 1, "send", [send(x, 2, 1), send(y, 5, 0)])
    h.complete(b, "ok", [send(x, 2, 1), send(y, 5, 0)])
    h.complete(a, "ok", [send(x, 1, 0), poll({y: [(0, 5)]})])
    h.assign(p + 2, [x])
    h.txn(p + 2, [poll({x: [(0, 1), (1, 2)]})])


def g1c_pure(h: History, x: int, p: int) -> None:
    """Each of two concurrent txns reads the other's write: circular information flow."""
    y = x + 1
    h.assign(p, [y])
    h.assign(p + 1, [x])
    a = h.invoke(p, "txn", [send(x, 1, 0), poll({})])
    b = h.invoke(p + 1, "txn", [send(y, 1, 0), poll({})])
    h.complete(a, "ok", [send(x, 1, 0), poll({y: [(0, 1)]})])
    h.complete(b, "ok", [send(y, 1, 0), poll({x: [(0, 1)]})])


def g0_realtime(h: History, x: int, p: int) -> None:
    """T1 completes before T2 starts, yet T2's write sits before T1's."""
    h.txn(p, [send(x, 1, 1)])
    h.txn(p + 1, [send(x, 2, 0)])
    h.assign(p + 2, [x])
    h.txn(p + 2, [poll({x: [(0, 2), (1, 1)]})])


def g1c_process(h: History, x: int, p: int) -> None:
    """A process polls a value its own later op sends."""
    h.assign(p, [x])
    h.txn(p, [poll({x: [(0, 7)]})])
    h.txn(p, [send(x, 7, 0)])


def g1c_realtime(h: History, x: int, p: int) -> None:
    """T1 polls a value that T2, started only after T1 completed, sends."""
    h.assign(p, [x])
    h.txn(p, [poll({x: [(0, 9)]})])
    h.txn(p + 1, [send(x, 9, 0)])


SCENARIOS = {
    "G0": g0,
    "G1c-mixed": g1c_mixed,
    "G1c-pure": g1c_pure,
    "G0-realtime": g0_realtime,
    "G1c-process": g1c_process,
    "G1c-realtime": g1c_realtime,
}
EXPECTED = {
    "G0": "G0",
    "G1c-mixed": "G1c",
    "G1c-pure": "G1c",
    "G0-realtime": "G0-realtime",
    "G1c-process": "G1c-process",
    "G1c-realtime": "G1c-realtime",
}


@pytest.fixture(scope="module")
def history() -> tuple[History, dict[str, int]]:
    h = History()
    keys = {}
    for i, (name, build) in enumerate(SCENARIOS.items()):
        keys[name] = 10 * i
        build(h, 10 * i, 10 * i)
    return h, keys


@pytest.fixture(scope="module")
def with_ww(spark, history) -> dict[str, Any]:
    return check(history[0].table(), spark=spark)


@pytest.fixture(scope="module")
def without_ww(spark, history) -> dict[str, Any]:
    return check(history[0].table(), spark=spark, ww_deps=False)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_cycle_kind_is_found(with_ww, history, name: str) -> None:
    x = history[1][name]
    cycles = [
        c
        for c in with_ww["anomalies"].get(EXPECTED[name], [])
        if {s.get("key") for s in c["steps"]} & {x, x + 1}
    ]
    assert cycles, with_ww["anomalies"].keys()
    assert cycles[0]["explanation"].startswith("Let T1 = op ")
    assert "a " + EXPECTED[name] + " cycle" in cycles[0]["explanation"]


def test_step_explanations(with_ww, history) -> None:
    x = history[1]["G1c-pure"]
    (cyc,) = [
        c for c in with_ww["anomalies"]["G1c"] if {s.get("key") for s in c["steps"]} & {x, x + 1}
    ]
    assert cyc["pure_wr"] and [s["rel"] for s in cyc["steps"]] == ["wr", "wr"]
    assert (
        f"polled 1 from key {x}" in cyc["explanation"] or f"from key {x + 1}" in cyc["explanation"]
    )


def test_verdict_with_ww_deps(with_ww) -> None:
    # the pure wr cycles fail the run; G0 (and mixed G1c alone) would not
    assert with_ww["valid"] is False
    assert "G0" in with_ww["allowed"] and "G0-realtime" in with_ww["allowed"]
    assert "G1c" not in with_ww["allowed"]


def test_no_ww_deps_drops_write_order_cycles(without_ww, history) -> None:
    keys = history[1]
    for name in ("G0", "G1c-mixed", "G0-realtime"):
        x = keys[name]
        assert not {k for k in kinds_at(without_ww, {x, x + 1}) if k.startswith("G")}, name
    x = keys["G1c-pure"]
    assert "G1c" in kinds_at(without_ww, {x, x + 1})
    assert without_ww["stats"]["ww_deps"] is False
