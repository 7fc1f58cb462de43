"""The interpreter with real threads and in-process clients (no cluster)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import generator as g
from harness.interpreter import Interpreter
from harness.protocols import InvalidCompletion, NoopClient, NoopNemesis, ValidatingClient
from tests.histories import assert_invocations_paired


def run(gen: Any, client: Any = None, concurrency: int = 3, **kw: Any) -> tuple[list[dict], Any]:
    history: list[dict] = []
    it = Interpreter(
        {},
        gen,
        client=client or NoopClient(),
        nemesis=kw.pop("nemesis", NoopNemesis()),
        concurrency=concurrency,
        journal=history.append,
        **kw,
    )
    return history, it.run()


def check_well_formed(history: list[dict]) -> None:
    assert [o["index"] for o in history] == list(range(len(history)))
    times = [o["time"] for o in history]
    assert times == sorted(times)
    assert_invocations_paired(history)


def test_every_op_is_invoked_and_completed() -> None:
    history, outcome = run(g.on_clients(g.limit(500, g.repeat({"f": "w"}))), concurrency=4)
    check_well_formed(history)
    assert outcome.entries == 1000 and not outcome.interrupted
    assert {o["process"] for o in history} == {0, 1, 2, 3}


class Flaky:
    """Raises on values divisible by 3, answers info on 1 mod 3, else ok."""

    def __init__(self, opened: list | None = None) -> None:
        self.opened = opened if opened is not None else []

    def open(self, test: Any, node: str) -> Flaky:
        self.opened.append(node)
        return self

    def setup(self, test: Any) -> None: ...
    def teardown(self, test: Any) -> None: ...
    def close(self, test: Any) -> None: ...

    def invoke(self, test: Any, op: dict) -> dict:
        if op["value"] % 3 == 0:
            raise ConnectionError("broker went away\nmore detail")
        return {**op, "type": "info" if op["value"] % 3 == 1 else "ok"}


def test_exceptions_become_info_and_processes_are_replaced() -> None:
    client = Flaky()
    ops = [{"f": "w", "value": i} for i in range(9)]
    history, _ = run(g.on_clients(ops), client=client, concurrency=1, nodes=["a", "b"])
    check_well_formed(history)
    done = [o for o in history if o["type"] != "invoke"]
    assert [o["type"] for o in done] == ["info", "info", "ok"] * 3
    assert done[0]["error"] == "indeterminate: ConnectionError: broker went away"
    procs = [o["process"] for o in history if o["type"] == "invoke"]
    assert procs == [0, 1, 2, 2, 3, 4, 4, 5, 6]
    assert len(client.opened) == 7  # one client per process
    assert set(client.opened) == {"a"}


def test_client_that_cannot_open_fails_definitely() -> None:
    class NoConnect(NoopClient):
        def open(self, test: Any, node: str) -> NoopClient:
            raise OSError("connection refused")

    history, _ = run(g.on_clients([{"f": "w"}, {"f": "w"}]), client=NoConnect(), concurrency=1)
    done = [o for o in history if o["type"] != "invoke"]
    assert [o["type"] for o in done] == ["fail", "fail"]
    assert done[0]["error"].startswith("no-client: OSError")
    assert [o["process"] for o in history if o["type"] == "invoke"] == [0, 1]


def test_validating_client_rejects_a_changed_process() -> None:
    class Liar(NoopClient):
        def invoke(self, test: Any, op: dict) -> dict:
            return {**op, "type": "ok", "process": 99}

    history, _ = run(g.on_clients([{"f": "w"}]), client=ValidatingClient(Liar()), concurrency=1)
    assert history[1]["type"] == "info"
    assert "InvalidCompletion" in history[1]["error"]
    with pytest.raises(InvalidCompletion, match="changed process"):
        ValidatingClient(Liar()).invoke({}, {"type": "invoke", "process": 1, "f": "w"})


def test_nemesis_ops_run_on_the_nemesis_thread() -> None:
    seen: list[str] = []

    class Recorder(NoopNemesis):
        def invoke(self, test: Any, op: dict) -> dict:
            seen.append(threading.current_thread().name)
            return {**op, "type": "info", "value": "done"}

    gen = g.with_nemesis([{"f": "start"}, {"f": "stop"}], g.limit(5, g.repeat({"f": "w"})))
    history, _ = run(gen, nemesis=Recorder())
    check_well_formed(history)
    assert [o["f"] for o in history if o["process"] == "nemesis"] == ["start"] * 2 + ["stop"] * 2
    assert seen == ["jepka-worker-nemesis-0"] * 2


def test_ops_wait_for_their_time_and_sleep_is_not_recorded() -> None:
    gen = g.phases(g.once({"f": "a"}), g.sleep(0.2), g.once({"f": "b"}))
    history, _ = run(g.on_clients(gen), concurrency=2)
    assert [o["f"] for o in history] == ["a", "a", "b", "b"]
    assert history[2]["time"] - history[1]["time"] >= 200_000_000


def test_stop_ends_the_run_and_records_what_finished() -> None:
    release = threading.Event()

    class Slow(NoopClient):
        def invoke(self, test: Any, op: dict) -> dict:
            release.wait(5)
            return {**op, "type": "ok"}

    history: list[dict] = []
    it = Interpreter(
        {},
        g.on_clients(g.repeat({"f": "w"})),
        client=Slow(),
        nemesis=NoopNemesis(),
        concurrency=2,
        journal=history.append,
    )
    threading.Timer(0.2, lambda: (it.stop.set(), release.set())).start()
    outcome = it.run()
    assert outcome.interrupted and outcome.abandoned == 0
    check_well_formed(history)


def test_stuck_client_is_abandoned_after_the_drain_timeout() -> None:
    class Stuck(NoopClient):
        def invoke(self, test: Any, op: dict) -> dict:
            time.sleep(30)
            return {**op, "type": "ok"}

    history: list[dict] = []
    it = Interpreter(
        {},
        g.on_clients(g.once({"f": "w"})),
        client=Stuck(),
        nemesis=NoopNemesis(),
        concurrency=1,
        journal=history.append,
        drain_timeout_s=0.1,
        close_timeout_s=0.1,
    )
    threading.Timer(0.1, it.stop.set).start()
    outcome = it.run()
    assert outcome.abandoned == 1
    assert [o["type"] for o in history] == ["invoke"]


def test_same_seed_same_schedule() -> None:
    def schedule(seed: int) -> list[tuple]:
        gens = [g.repeat({"f": "a"}), g.repeat({"f": "b"}), g.repeat({"f": "c"})]
        gen = g.on_clients(g.limit(200, g.mix(gens, g.Rand(seed))))
        history, _ = run(gen, concurrency=4)
        return [o["f"] for o in history if o["type"] == "invoke"]

    assert schedule(5) == schedule(5)
    assert schedule(5) != schedule(6)


def test_stop_is_noticed_while_waiting_for_a_far_future_op() -> None:
    history: list[dict] = []
    far = g.map_ops(lambda o: {**o, "time": 3600 * 10**9}, g.once({"f": "later"}))
    it = Interpreter(
        {},
        g.on_clients([{"f": "now"}, far]),
        client=NoopClient(),
        nemesis=NoopNemesis(),
        concurrency=1,
        journal=history.append,
    )
    threading.Timer(0.2, it.stop.set).start()
    done = threading.Event()
    threading.Thread(target=lambda: (it.run(), done.set()), daemon=True).start()
    assert done.wait(10), "the interpreter kept waiting after stop"
    assert [o["f"] for o in history] == ["now", "now"]


class Hangs(NoopClient):
    """Answers every op ok, except that ops with a value in ``stuck`` wait for
    ``release`` (at most 30 s) first."""

    def __init__(self, stuck: set[int], release: threading.Event) -> None:
        self.stuck, self.release = stuck, release

    def invoke(self, test: Any, op: dict) -> dict:
        if op["value"] in self.stuck:
            self.release.wait(30)
        return {**op, "type": "ok"}


def test_a_client_call_that_never_returns_times_out_as_info(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = threading.Event()
    history: list[dict] = []
    ops = [{"f": "w", "value": v} for v in range(4)]
    it = Interpreter(
        {},
        g.on_clients(ops),
        client=Hangs({1}, release),
        nemesis=NoopNemesis(),
        concurrency=1,
        journal=history.append,
        op_timeout_s=0.3,
        close_timeout_s=0.1,  # the hung worker is released only after the run
    )
    outcome = it.run()
    release.set()
    assert outcome.abandoned == 0 and not outcome.interrupted
    check_well_formed(history)
    done = [o for o in history if o["type"] != "invoke"]
    assert [(o["value"], o["type"]) for o in done] == [(0, "ok"), (1, "info"), (2, "ok"), (3, "ok")]
    assert done[1]["error"] == "timeout: no answer in 0.3 s"
    assert "stuck in wait" in caplog.text and "<- invoke (test_interpreter.py:" in caplog.text
    assert (
        done[1]["stuck_in"].startswith("wait (")
        and "<- invoke (test_interpreter.py:" in done[1]["stuck_in"]
    )
    assert [o["process"] for o in done] == [0, 0, 1, 1]  # a fresh process after the timeout


def test_a_worker_stuck_past_the_run_is_awaited_until_its_call_returns() -> None:
    release = threading.Event()
    it = Interpreter(
        {},
        g.on_clients([{"f": "w", "value": 1}]),
        client=Hangs({1}, release),
        nemesis=NoopNemesis(),
        concurrency=1,
        journal=lambda op: None,
        op_timeout_s=0.2,
        close_timeout_s=0.1,
    )
    it.run()
    assert it.await_workers(0.1) == ["jepka-worker-0-0"]
    release.set()
    assert it.await_workers(10) == []


def test_the_run_ends_without_waiting_for_a_worker_its_op_timed_out_on() -> None:
    release = threading.Event()
    it = Interpreter(
        {},
        g.on_clients([{"f": "w", "value": 1}, {"f": "w", "value": 2}]),
        client=Hangs({1}, release),
        nemesis=NoopNemesis(),
        concurrency=1,
        journal=lambda op: None,
        op_timeout_s=0.2,
        close_timeout_s=60,  # the current worker closes at once; the stuck one is not awaited
    )
    done = threading.Event()
    threading.Thread(target=lambda: (it.run(), done.set()), daemon=True).start()
    ended = done.wait(20)
    release.set()
    assert ended, "the run waited for the worker stuck in its timed-out call"


def test_an_op_timeout_pseudo_op_sets_the_timeout_for_the_ops_after_it() -> None:
    release = threading.Event()
    history: list[dict] = []
    first = [{"f": "w", "value": v} for v in range(2)]
    final = [{"f": "r", "value": v} for v in range(2, 5)]
    it = Interpreter(
        {},
        g.phases(g.on_clients(first), g.op_timeout(0.2), g.on_clients(final)),
        client=Hangs({1, 3}, release),
        nemesis=NoopNemesis(),
        concurrency=1,
        journal=history.append,
        op_timeout_s=1.5,
        close_timeout_s=0.1,
    )
    outcome = it.run()
    release.set()
    check_well_formed(history)
    assert not outcome.interrupted
    done = [o for o in history if o["type"] != "invoke"]
    assert [(o["value"], o["type"]) for o in done] == [
        (0, "ok"), (1, "info"), (2, "ok"), (3, "info"), (4, "ok"),
    ]  # fmt: skip
    assert [o["error"] for o in done if o["type"] == "info"] == [
        "timeout: no answer in 1.5 s",
        "timeout: no answer in 0.2 s",
    ]
    assert all(o["type"] != "op-timeout" for o in history)  # never in the history


class SlowNemesis(NoopNemesis):
    """Takes ``seconds[value]`` to carry out an op, as a restart waiting for
    its brokers does."""

    def __init__(self, seconds: dict[str, float]) -> None:
        self.seconds = seconds

    def invoke(self, test: Any, op: dict) -> dict:
        time.sleep(self.seconds[op["value"]])
        return {**op, "type": "info"}


def test_a_nemesis_op_has_its_own_timeout() -> None:
    history: list[dict] = []
    it = Interpreter(
        {},
        g.phases(
            g.on_nemesis([{"f": "start", "value": "slow"}, {"f": "start", "value": "stuck"}]),
            g.on_clients([{"f": "w", "value": 0}]),
        ),
        client=NoopClient(),
        nemesis=SlowNemesis({"slow": 0.6, "stuck": 5}),
        concurrency=1,
        journal=history.append,
        op_timeout_s=0.2,  # a client op's bound is not the nemesis's
        nemesis_timeout_s=1.5,
        close_timeout_s=0.1,
    )
    it.run()
    check_well_formed(history)
    done = [o for o in history if o["type"] != "invoke" and o["process"] == "nemesis"]
    assert [(o["value"], o.get("error")) for o in done] == [
        ("slow", None),
        ("stuck", "timeout: no answer in 1.5 s"),
    ]


class Closing(NoopClient):
    """Records each client it opens, and whether that client was closed; a
    close takes a moment, as a Kafka client's does."""

    def __init__(self, opened: list[Closing] | None = None) -> None:
        self.opened = opened if opened is not None else []
        self.closed = False

    def open(self, test: Any, node: str) -> Closing:
        client = Closing(self.opened)
        self.opened.append(client)
        return client

    def close(self, test: Any) -> None:
        time.sleep(0.2)
        self.closed = True


def test_every_client_is_closed_when_the_run_returns() -> None:
    opened: list[Closing] = []
    run(g.on_clients(g.limit(30, g.repeat({"f": "w"}))), client=Closing(opened), concurrency=3)
    assert len(opened) == 3 and all(c.closed for c in opened)


def test_every_client_is_closed_when_the_run_fails() -> None:
    opened: list[Closing] = []
    seen: list[dict] = []

    def journal(op: dict) -> None:
        if len(seen) == 10:
            raise OSError("disk full")
        seen.append(op)

    it = Interpreter(
        {},
        g.on_clients(g.repeat({"f": "w"})),
        client=Closing(opened),
        nemesis=NoopNemesis(),
        concurrency=2,
        journal=journal,
    )
    with pytest.raises(OSError, match="disk full"):
        it.run()
    assert len(opened) == 2 and all(c.closed for c in opened)
