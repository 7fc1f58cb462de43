"""A call made in a process of its own answers, and ends its process at once
even when it leaves a thread that never ends, as a stuck librdkafka call does."""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from harness.isolated import NoAnswer, call_isolated, ends_with_its_call
from harness.stopping import exit_once, stop_signals_exit


def stuck_forever(value: int) -> int:
    """Leaves a non-daemon thread that never ends, which would hold up a normal exit."""
    threading.Thread(target=threading.Event().wait, name="stuck").start()
    return value * 2


def refuse(text: str) -> None:
    raise ValueError(text)


def die(code: int) -> None:
    os._exit(code)


def test_the_answer_comes_back_and_the_stuck_thread_ends_with_its_process() -> None:
    threads = set(threading.enumerate())
    t0 = time.monotonic()
    assert call_isolated(stuck_forever, 21) == 42
    assert time.monotonic() - t0 < 25  # not EXIT_S: the process ended of itself
    assert set(threading.enumerate()) <= threads


def test_only_the_isolated_process_is_told_it_ends_with_its_call() -> None:
    assert call_isolated(ends_with_its_call) is True
    assert ends_with_its_call() is False


def test_what_the_call_raises_is_raised_here() -> None:
    with pytest.raises(ValueError, match="no such case"):
        call_isolated(refuse, "no such case")


def test_a_process_that_dies_without_answering_is_no_answer() -> None:
    with pytest.raises(NoAnswer, match="exit code 3"):
        call_isolated(die, 3)


def terminated_alone() -> None:
    """Stands for a run whose own process gets SIGTERM: it heals on the way
    out, the signal turned into SystemExit as ``Cluster.healing`` does."""
    previous = signal.signal(signal.SIGTERM, exit_once)
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)
    finally:
        signal.signal(signal.SIGTERM, previous)


def interrupted_alone() -> None:
    """A process sent SIGINT on its own (``kill -INT``): an interrupt. Python's
    own handler is set first: a process started by one that ignores SIGINT
    (a test worker) inherits that."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(10)


def test_a_process_stopped_on_its_own_is_no_answer_and_no_stop_here() -> None:
    """A SIGTERM to the run's process alone ends that run, not the command
    that made it (a series or a detection job goes on with its next run)."""
    with pytest.raises(NoAnswer, match=r"its process was stopped \(SystemExit: 143\)"):
        call_isolated(terminated_alone)
    with pytest.raises(KeyboardInterrupt):  # an interrupt, wherever it was sent
        call_isolated(interrupted_alone)


def heals_when_stopped(running: str, healed: str, heal_s: float) -> str:
    """Stands for a run stopped outside ``Cluster.healing`` (starting its
    cluster, checking, tearing down): no handler of its own, only a
    ``finally`` that takes ``heal_s`` seconds and then touches ``healed``;
    touches ``running`` once it runs."""
    try:
        Path(running).touch()
        time.sleep(30)
        return "not stopped"
    finally:
        time.sleep(heal_s)
        Path(healed).touch()


def stop_once_running(running: Path, signum: int, to_group: bool = False) -> threading.Timer:
    """Sends ``signum`` to this process once ``running`` exists; ``to_group``:
    as `timeout` does, to the call's process too, then here a second time."""

    def stop() -> None:
        deadline = time.monotonic() + 30
        while not running.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        for child in multiprocessing.active_children() if to_group else ():
            os.kill(child.pid, signum)  # type: ignore[arg-type]
        os.kill(os.getpid(), signum)
        if to_group:
            time.sleep(0.2)
            os.kill(os.getpid(), signum)

    timer = threading.Timer(0, stop)
    timer.start()
    return timer


@pytest.mark.parametrize(
    ("signum", "to_group"),
    [(signal.SIGTERM, False), (signal.SIGHUP, False), (signal.SIGTERM, True)],
    ids=["sigterm", "sighup", "sigterm-to-the-group"],
)
def test_a_stop_signal_here_stops_the_run_there_and_then_this_process(
    tmp_path: Path, signum: int, to_group: bool
) -> None:
    """`kill <pid>` of a detection job or a series: its run tears down
    before the command exits, rather than going on alone. Sent to the whole
    group (`timeout`, a terminal hang-up), the run gets the signal twice,
    directly and passed on, and the command may get it twice too: neither
    second one may cut the run's clean-up short."""
    running, healed = tmp_path / "running", tmp_path / "healed"
    timer = stop_once_running(running, signum, to_group)
    t0 = time.monotonic()
    try:
        with pytest.raises(SystemExit) as stopped:
            call_isolated(heals_when_stopped, str(running), str(healed), 1.0)
    finally:
        timer.cancel()
    assert stopped.value.code == 128 + signum
    assert healed.exists()  # its clean-up ran to the end before the answer
    assert time.monotonic() - t0 < 25  # not its 30 s of sleep
    assert signal.getsignal(signum) is signal.SIG_DFL
    with pytest.raises(SystemExit), stop_signals_exit():  # a later block is stopped too
        os.kill(os.getpid(), signum)
        time.sleep(5)


def test_a_stop_passed_on_leaves_this_process_stopping(tmp_path: Path) -> None:
    """Once the call's process has answered a stop, this one is on its way
    out too: a stop signal more while the caller cleans up (a suite writing
    what its finished cases gave) is ignored, as the second of any stop is."""
    running, healed = tmp_path / "running", tmp_path / "healed"
    timer = stop_once_running(running, signal.SIGTERM)
    cleaned_up = False
    with pytest.raises(SystemExit) as stopped, stop_signals_exit():
        try:
            call_isolated(heals_when_stopped, str(running), str(healed), 1.0)
        finally:
            timer.cancel()
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)  # the handler runs here, and must not raise
            cleaned_up = True
    assert stopped.value.code == 128 + signal.SIGTERM
    assert healed.exists() and cleaned_up


def interrupted_in_setup(delay: float) -> str:
    """Stands for a case whose set-up is interrupted: the interrupt comes in
    while it is not in the run's own loop."""
    time.sleep(delay)
    return "not interrupted"


def answers_its_interrupt(running: str) -> str:
    """Stands for a run, which heals, checks and answers when interrupted;
    touches ``running`` once it can take the interrupt."""
    try:
        Path(running).touch()
        time.sleep(30)
    except KeyboardInterrupt:
        return "interrupted, and said so"
    return "not interrupted"


def ctrl_c_after(
    seconds: float, running: Path | None = None, children: bool = True
) -> threading.Timer:
    """Ctrl-C goes to the terminal's whole process group: to the call's process
    (unless not ``children``) and to this one (sent to each here, not to the
    test run's group); once ``running`` exists, when given."""

    def ctrl_c() -> None:
        deadline = time.monotonic() + 30
        while running is not None and not running.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        for child in multiprocessing.active_children() if children else ():
            os.kill(child.pid, signal.SIGINT)  # type: ignore[arg-type]
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(seconds, ctrl_c)
    timer.start()
    return timer


def test_an_interrupt_reaches_the_process_and_goes_on_here() -> None:
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = ctrl_c_after(1.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            call_isolated(interrupted_in_setup, 10.0)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)


def test_an_answer_that_tells_of_the_interrupt_can_be_returned(tmp_path: Path) -> None:
    running = tmp_path / "running"
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = ctrl_c_after(0.0, running)
    try:
        answer = call_isolated(
            answers_its_interrupt, str(running), says_interrupted=lambda a: "interrupted" in a
        )
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert answer == "interrupted, and said so"


def test_an_interrupt_the_answer_does_not_tell_of_goes_on_here(tmp_path: Path) -> None:
    """Ctrl-C sent to this process alone: the call ends as it would have, and
    the interrupt is not lost."""
    running = tmp_path / "running"
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = ctrl_c_after(0.0, running, children=False)
    try:
        with pytest.raises(KeyboardInterrupt):
            call_isolated(
                touch_then_sleep, str(running), 2.0, says_interrupted=lambda a: "interrupted" in a
            )
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)


def touch_then_sleep(running: str, seconds: float) -> str:
    Path(running).touch()
    time.sleep(seconds)
    return "finished"


def raise_unpicklable() -> None:
    from confluent_kafka import KafkaError, KafkaException

    raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "list_topics timed out"))


def test_an_error_that_cannot_be_pickled_comes_back_named() -> None:
    with pytest.raises(RuntimeError, match=r"KafkaException: .*list_topics timed out"):
        call_isolated(raise_unpicklable)


def log_level() -> int:
    return logging.getLogger().level


def test_the_process_logs_at_this_ones_level() -> None:
    root = logging.getLogger()
    before = root.level
    root.setLevel(logging.DEBUG)
    try:
        assert call_isolated(log_level) == logging.DEBUG
    finally:
        root.setLevel(before)


def signal_self(signum: int) -> str:
    os.kill(os.getpid(), signum)
    return "still here"


def test_sigusr1_prints_stacks_and_the_run_goes_on() -> None:
    """How a stuck run's threads are found; unregistered, the signal would
    kill the process before its heal."""
    assert call_isolated(signal_self, signal.SIGUSR1) == "still here"
