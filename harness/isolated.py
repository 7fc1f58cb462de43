"""A call run in a process of its own, which ends as soon as it has answered.

librdkafka calls can stay stuck past their own timeouts (librdkafka #5456,
#5511) and keep their client's threads alive, reconnecting to addresses a
later cluster takes, until their process ends. A run made in a process of
its own takes them with it; the process ends with ``os._exit`` so that
nothing it leaves behind can hold up its exit."""

from __future__ import annotations

import contextlib
import faulthandler
import io
import logging
import multiprocessing
import os
import pickle
import signal
import sys
from collections.abc import Callable
from typing import Any

from harness.stopping import STOP_SIGNALS, signal_handled, stop, stop_signals_exit

#: how long the process may take to end once it has answered
EXIT_S = 30.0
_ends_with_its_call = False


def ends_with_its_call() -> bool:
    """Whether this process is one of ``call_isolated``'s, which ends as soon
    as its call has answered: what its call leaves running needs no waiting
    for."""
    return _ends_with_its_call


class NoAnswer(Exception):
    """The process ended without answering (it crashed or was killed), or
    was stopped by a signal to it alone (its answer a ``SystemExit``)."""


def call_isolated(
    fn: Callable[..., Any],
    *args: Any,
    says_interrupted: Callable[[Any], bool] = lambda answer: False,
) -> Any:
    """``fn(*args)`` in a fresh (spawned) process logging as this one does: its
    result, or what it raised (an exception that cannot be pickled as a
    RuntimeError naming it). A Ctrl-C reaches that process too; its answer
    is awaited (a run interrupted there heals and tears down), then the
    interrupt goes on here, unless the answer ``says_interrupted``: then it
    is returned, as the callee's own account of the interrupt. A second
    Ctrl-C stops it at once. A SIGTERM or SIGHUP here is passed on to that
    process, which ends its call as its own would (``harness.stopping``: a
    run heals, then its cluster is torn down); once it has answered, this
    process exits as the signal asks (``SystemExit``, 128 + the signal),
    whatever the answer, so that stopping a command that runs tests in such
    processes leaves no run going on without it. Later stop signals are
    ignored, as they are there (``timeout`` sends its signal to the command
    and then to its whole group): SIGKILL ends both at once. A process
    stopped with no signal here (a SIGTERM to it alone) is NoAnswer."""
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    level = logging.getLogger().level
    child = context.Process(target=_answer, args=(fn, args, send, level))
    interrupts = 0
    stops: list[int] = []

    def on_interrupt(signum: int, frame: Any) -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts > 1 and child.pid is not None:
            child.terminate()

    def on_stop(signum: int, frame: Any) -> None:
        stops.append(signum)
        if len(stops) == 1 and child.pid is not None:  # else passed on once started
            os.kill(child.pid, signum)

    try:
        # signals are counted, not raised, while the answer is awaited: raised
        # in the middle of reading it, they would lose the answer
        with contextlib.ExitStack() as handlers:
            handlers.enter_context(signal_handled(signal.SIGINT, on_interrupt))
            for signum in STOP_SIGNALS:
                handlers.enter_context(signal_handled(signum, on_stop))
            child.start()
            send.close()
            if stops and child.pid is not None:
                os.kill(child.pid, stops[0])
            answer: tuple[bool, Any] | None = receive.recv()
    except EOFError:
        answer = None
    finally:
        if child.pid is not None:
            child.join(EXIT_S)
            if child.is_alive():
                child.kill()
                child.join()
    if stops:
        stop(stops[0])
    if interrupts and not (answer is not None and answer[0] and says_interrupted(answer[1])):
        raise KeyboardInterrupt
    if answer is None:
        raise NoAnswer(f"its process ended with exit code {child.exitcode} and no answer")
    ok, value = answer
    if not ok and isinstance(value, SystemExit):
        # stopped while this process was not: the end of that call, not of this one
        raise NoAnswer(f"its process was stopped (SystemExit: {value})")
    if not ok:
        raise value
    return value


def dump_stacks_on_sigusr1() -> None:
    """`kill -USR1 <pid>` prints every thread's stack: how a stuck client is
    found. Needs a real stderr file (not so when embedded, e.g. under pytest)."""
    with contextlib.suppress(io.UnsupportedOperation, AttributeError, ValueError, RuntimeError):
        faulthandler.register(signal.SIGUSR1, all_threads=True)


def _answer(fn: Callable[..., Any], args: tuple[Any, ...], send: Any, level: int) -> None:
    global _ends_with_its_call
    _ends_with_its_call = True
    logging.basicConfig(level=level)
    dump_stacks_on_sigusr1()
    try:
        try:
            with stop_signals_exit():  # a run stopped by a signal tears down on its way out
                answer: tuple[bool, Any] = (True, fn(*args))
        except BaseException as e:  # an interrupt too: the caller re-raises it
            answer = (False, e)
        try:
            send.send(answer)
        except (pickle.PicklingError, TypeError, AttributeError):  # KafkaException, for one
            ok, value = answer
            what = "its answer" if ok else f"{type(value).__name__}: {value}"
            send.send((False, RuntimeError(f"{what}, which cannot be pickled")))
    finally:
        send.close()
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
