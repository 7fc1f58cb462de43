"""A call run in a process of its own, which ends as soon as it has answered.

librdkafka calls can stay stuck past their own timeouts (librdkafka #5456,
#5511) and keep their client's threads alive, reconnecting to addresses a
later cluster takes, until their process ends. A run made in a process of
its own takes them with it; the process ends with ``os._exit`` so that
nothing it leaves behind can hold up its exit."""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
from collections.abc import Callable
from typing import Any

#: how long the process may take to end once it has answered
EXIT_S = 30.0


class NoAnswer(Exception):
    """The process ended without answering (it crashed or was killed)."""


def call_isolated(fn: Callable[..., Any], *args: Any, answer_interrupts: bool = False) -> Any:
    """``fn(*args)`` in a fresh (spawned) process logging as this one does: its
    result, or what it raised. A Ctrl-C reaches that process too; its answer
    is awaited (a run interrupted there heals and tears down), then the
    interrupt goes on here, unless ``answer_interrupts``: then the answer is
    returned, for a callee whose answer says it was interrupted. A second
    Ctrl-C stops it at once."""
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    level = logging.getLogger().level
    child = context.Process(target=_answer, args=(fn, args, send, level))
    child.start()
    send.close()
    interrupted = False
    answer: tuple[bool, Any] | None = None
    try:
        while answer is None:
            try:
                answer = receive.recv()
            except EOFError:
                break
            except KeyboardInterrupt:
                if interrupted:
                    child.terminate()
                    raise
                interrupted = True
    finally:
        child.join(EXIT_S)
        if child.is_alive():
            child.kill()
            child.join()
    if interrupted and not (answer_interrupts and answer is not None):
        raise KeyboardInterrupt
    if answer is None:
        raise NoAnswer(f"its process ended with exit code {child.exitcode} and no answer")
    ok, value = answer
    if not ok:
        raise value
    return value


def _answer(fn: Callable[..., Any], args: tuple[Any, ...], send: Any, level: int) -> None:
    logging.basicConfig(level=level)
    try:
        try:
            answer: tuple[bool, Any] = (True, fn(*args))
        except BaseException as e:  # an interrupt too: the caller re-raises it
            answer = (False, e)
        send.send(answer)
    finally:
        send.close()
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
