"""The runner: the whole test generator replayed without a cluster, and one
real ``jepka test`` end to end."""

from __future__ import annotations

import _thread
import contextlib
import itertools
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyspark import SparkContext

from broker.launcher import BrokerProcess
from checkers.spark import session
from generator import Generator
from generator.simulate import ok_completion, simulate
from harness.cli import main
from harness.runner import FaultTracker, RunState, build_generator, run_test
from harness.spec import resolve
from harness.store import HistoryWriter
from nemesis.package import build as build_nemesis
from tests.autogroups import AUTOGROUPS, autogroup, nice
from tests.client_threads import Snapshot
from tests.harness.runs import history_ops
from workloads.workload import Workload
from workloads.workload import build as build_workload


def generator_of(seed: int, concurrency: int, workload: str = "txn") -> tuple[Generator, Workload]:
    """The full test generator for ``seed`` (20 s of workload, 5 s of final
    reads), and the workload it drives."""
    spec = resolve(
        None,
        {
            "workload": workload,
            "nemesis": "kill,partition",
            "seed": seed,
            "time_limit": 20,
            "rate": 20,
            "concurrency": concurrency,
            "recovery_time": 1,
            "final_time_limit": 5,
            "nemesis_interval": 3,
        },
    )
    built = build_workload(spec.workload_options(), "unused:9092")
    package = build_nemesis(list(spec.faults), seed=spec.seed, interval=spec.nemesis_interval)
    return build_generator(spec, built, package), built


def simulated(
    seed: int, latency: int, concurrency: int, complete: Callable[[dict], dict] = ok_completion
) -> list[dict]:
    """The history of the full test generator for ``seed``, an op taking
    ``latency`` ns unless ``complete`` times it."""
    gen, _ = generator_of(seed, concurrency)
    return simulate(gen, concurrency=concurrency, latency=latency, complete=complete)


def schedule(seed: int, latency: int, concurrency: int) -> tuple[list, list]:
    """The client and nemesis ops the full test generator issues for ``seed``."""
    invokes = [o for o in simulated(seed, latency, concurrency) if o["type"] == "invoke"]
    client = [
        (o["f"], o["value"], o.get("abort"))
        for o in invokes
        if o["process"] != "nemesis" and o["f"] not in ("assign", "subscribe")
    ]
    faults = [
        (o["f"], o["value"], o["time"] // 1_000_000) for o in invokes if o["process"] == "nemesis"
    ]
    return client, faults


def test_same_seed_same_operation_and_fault_schedule() -> None:
    a = schedule(7, latency=2_000_000, concurrency=3)
    b = schedule(7, latency=9_000_000, concurrency=5)
    # faults at the same ms with the same targets; then the same final heal (2 ops)
    assert a[1][:-2] == b[1][:-2] and len(a[1]) >= 6
    assert [x[:2] for x in a[1][-2:]] == [x[:2] for x in b[1][-2:]]
    n = min(len(a[0]), len(b[0]))
    assert n > 300 and a[0][:n] == b[0][:n]
    assert any(abort for _, _, abort in a[0][:n])  # the aborts are in what is compared
    c = schedule(8, latency=2_000_000, concurrency=3)
    assert c[0][:50] != a[0][:50] and c[1] != a[1]


def test_the_fault_schedule_ends_healed_before_the_final_reads() -> None:
    _, faults = schedule(3, latency=1_000_000, concurrency=2)
    assert {f for f, _, _ in faults[-2:]} == {"start", "stop-partition"}
    assert all(t <= 20_000 for _, _, t in faults[:-2])


def test_the_heal_comes_at_the_time_limit_not_after_the_main_phases_last_ops() -> None:
    def slow_clients(o: dict) -> dict:  # a client op 5 s, as one held up by a fault
        slow = o["process"] != "nemesis" and o["f"] not in ("assign", "subscribe")
        return {**o, "type": "ok", "time": o["time"] + (5_000_000_000 if slow else 1_000_000)}

    h = simulated(3, latency=0, concurrency=2, complete=slow_clients)
    nemesis = [o for o in h if o["process"] == "nemesis" and o["type"] == "invoke"]
    faults, heal = nemesis[:-2], nemesis[-2:]
    assert {o["f"] for o in heal} == {"start", "stop-partition"}
    main = [o for o in h if o["process"] != "nemesis" and o["time"] < 20e9]
    main_ends = max(slow_clients(o)["time"] for o in main if o["type"] == "invoke")
    assert main_ends > 20e9  # client ops invoked before the 20 s limit end after it
    assert all(f["time"] < 20e9 for f in faults)
    assert all(20e9 <= o["time"] < main_ends for o in heal)  # not once those ops have ended


def test_the_final_reads_target_what_ops_acknowledged_after_the_time_limit() -> None:
    gen, workload = generator_of(5, concurrency=3, workload="queue")
    offsets = itertools.count()

    def slow_sends(o: dict) -> dict:  # a send takes 3 s; offsets in the order sent
        done = {**o, "type": "ok", "time": o["time"] + 1_000_000}
        if o.get("final"):  # read to the end of every partition
            return {**done, "ends": {str(k): [10**6, 10**6] for k in range(64)}}
        if o["process"] == "nemesis" or o["f"] != "send":
            return done
        sent = [["send", k, [next(offsets), v]] for _, k, v in o["value"]]
        return {**done, "time": o["time"] + 3_000_000_000, "value": sent}

    h = simulate(gen, concurrency=3, complete=slow_sends)
    acked = [
        (m[1], m[2][0], o["time"])
        for o in h
        if o["type"] == "ok" and o["f"] == "send"
        for m in o["value"]
    ]
    late = [(k, offset) for k, offset, t in acked if t > 20e9]
    assert late and max(offset for _, offset, _ in acked) == max(o for _, o in late)
    assert all(workload.tracker.highest[k] >= offset for k, offset in late)


def test_fault_tracker_follows_starts_and_stops() -> None:
    state = RunState()
    t = FaultTracker({"kill": "start", "start-partition": "stop-partition"}, state)
    t.observe({"process": "nemesis", "type": "info", "f": "kill", "value": ["n1"]})
    t.observe({"process": "nemesis", "type": "info", "f": "start-partition", "value": "one"})
    assert state.faults == {"kill": ["n1"], "start-partition": "one"}
    t.observe({"process": "nemesis", "type": "invoke", "f": "start", "value": "all"})
    t.observe({"process": "nemesis", "type": "info", "f": "start", "value": "all"})
    assert state.faults == {"start-partition": "one"}


# Both end-to-end tests run `jepka test` in this process (its `main`), so they
# share one Spark session with each other and with the checker's tests.


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.broker
@pytest.mark.spark
@pytest.mark.netns
def test_jepka_test_end_to_end_gives_a_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    ours = autogroup("self")
    code = main(
        [
            "test",
            "--workload",
            "queue",
            "--nemesis",
            "none",
            "--time-limit",
            "4",
            "--rate",
            "40",
            "--concurrency",
            "3",
            "--seed",
            "1",
            "--recovery-time",
            "0.5",
            "--final-time-limit",
            "20",
            "--key-count",
            "4",
            "--max-writes-per-key",
            "10",
            "--store",
            str(store),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "valid: True" in out
    assert autogroup("self") == ours  # only a JVM of the run's own yields
    jvm = SparkContext._gateway.proc.pid  # type: ignore[union-attr]
    if AUTOGROUPS and os.getsid(jvm) == jvm:  # launched by the run: its full share is back
        assert nice(jvm) == "0"
    run = (store / "latest").resolve()
    test = json.loads((run / "test.json").read_text())
    assert test["seed"] == 1 and test["status"] == "completed"
    assert test["keys"]["3"] == ["jepka-t1", 1]
    results = json.loads((run / "results.json").read_text())
    assert results["valid"] is True
    for name in ("history.jsonl", "history.parquet", "report.html"):
        assert (run / name).exists(), name
    ops = history_ops(run)
    assert sum(o["type"] == "ok" and o["f"] == "send" for o in ops) > 50
    assert any(o["f"] == "poll" and o.get("poll_ms") == 1000 for o in ops)  # final reads
    # keys rotated: fresh keys (topics made as they came) were written and read back
    sent = {m[1] for o in ops if o["type"] == "ok" and o["f"] == "send" for m in o["value"]}
    final = {int(k) for o in ops if o.get("final") and o["type"] == "ok" for k in o["value"][0][1]}
    assert max(sent) >= 4 and sent <= final


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.broker
@pytest.mark.spark
def test_ctrl_c_stops_and_still_checks_what_was_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broker = BrokerProcess(tmp_path / "data").start(60)
    before = Snapshot.take()
    store = tmp_path / "store"
    history = store / "latest" / "history.jsonl"

    def press_ctrl_c() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if history.exists() and history.read_text().count('"ok"') >= 20:
                break
            time.sleep(0.1)
        _thread.interrupt_main()

    # A process started in the background of a shell inherits SIGINT ignored,
    # and interrupt_main then does nothing: Ctrl-C is what a terminal delivers.
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    presser = threading.Thread(target=press_ctrl_c, daemon=True)
    presser.start()
    try:
        code = main(
            [
                "test",
                "--workload",
                "txn",
                "--time-limit",
                "300",
                "--rate",
                "30",
                "--concurrency",
                "2",
                "--key-count",
                "2",
                "--seed",
                "2",
                "--bootstrap",
                broker.bootstrap,
                "--store",
                str(store),
            ]
        )
        assert before.new_client_threads() == []  # every client closed before the verdict
    finally:
        presser.join(5)
        signal.signal(signal.SIGINT, handler)
        broker.kill()
    out, err = capsys.readouterr()
    # without final reads some sends may be unseen: any verdict, but a verdict
    assert code in (0, 1, 2) and "valid:" in out, out + err
    run = (store / "latest").resolve()
    assert json.loads((run / "test.json").read_text())["status"] == "interrupted"
    results = json.loads((run / "results.json").read_text())
    assert results["valid"] in (True, False, "unknown")
    ops = history_ops(run)
    assert sum(o["type"] == "ok" for o in ops) >= 20


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.broker
def test_a_run_that_fails_mid_way_closes_every_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = BrokerProcess(tmp_path / "data").start(60)
    # no verdict to give; whether the checker yields the CPU is recorded
    shares: list[str] = []

    @contextlib.contextmanager
    def yielding() -> Iterator[None]:
        shares.append("yielding")
        try:
            yield
        finally:
            shares.append("full share")

    monkeypatch.setattr(session, "yielding", yielding)
    monkeypatch.setattr(session, "start_in_background", lambda then: None)
    append = HistoryWriter.append

    def fail_after_40_ops(self: HistoryWriter, op: dict) -> None:
        if op["index"] == 40:
            shares.append("failed")
            raise OSError("disk full")
        append(self, op)

    monkeypatch.setattr(HistoryWriter, "append", fail_after_40_ops)
    flags = {"workload": "txn", "time_limit": 300, "rate": 30, "concurrency": 2, "key_count": 2}
    spec = resolve(None, {**flags, "bootstrap": broker.bootstrap, "store": str(tmp_path / "s")})
    before = Snapshot.take()
    try:
        with pytest.raises(OSError, match="disk full"):
            run_test(spec)
        assert before.new_client_threads() == []
        assert shares == ["yielding", "failed", "full share"]  # yielded through the run
    finally:
        broker.kill()
