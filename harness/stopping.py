"""SIGTERM and SIGHUP as a way out that runs its clean-up once.

A run stopped by a signal must still heal its faults and tear its cluster
down. The first SIGTERM or SIGHUP a process gets is raised as
``SystemExit`` (128 + the signal), so that ``finally`` blocks and context
managers run; every later one is ignored, so that a signal that arrives
twice (sent to the process group and also passed on by a parent, or sent
again by an impatient caller) cannot break out of the heal the first one
started. SIGKILL remains for a process that must end at once.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)

#: the stop signal this process is on its way out for, if any, and how many
#: ``stop_signals_exit`` blocks are open (the flag is cleared when the last
#: closes, so that a caller that catches the SystemExit can be stopped again)
_stopping: list[int] = []
_depth = [0]


def exit_once(signum: int, frame: Any) -> None:
    """A stop signal handler: ``SystemExit`` the first time, nothing after."""
    if _stopping:
        return
    stop(signum)


def stop(signum: int) -> NoReturn:
    """Exits as the stop signal ``signum`` asks (``SystemExit``, 128 + it),
    marking this process as on its way out, so that ``exit_once`` ignores
    later stop signals while a ``stop_signals_exit`` block is open. Outside
    one nothing is marked: no block's end would clear the mark, and a later
    block would ignore its first stop."""
    if _depth[0] and not _stopping:
        _stopping.append(signum)
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def signal_handled(signum: int, handler: Callable[[int, Any], None]) -> Iterator[None]:
    """``handler`` for ``signum`` meanwhile, where Python lets handlers be set
    (the main thread); the handler before is put back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signum, handler)
    try:
        yield
    finally:
        signal.signal(signum, previous)


@contextlib.contextmanager
def stop_signals_exit() -> Iterator[None]:
    """``exit_once`` for SIGTERM and SIGHUP meanwhile, in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    with contextlib.ExitStack() as handlers:
        for sig in STOP_SIGNALS:
            handlers.enter_context(signal_handled(sig, exit_once))
        _depth[0] += 1
        try:
            yield
        finally:
            _depth[0] -= 1
            if not _depth[0]:
                _stopping.clear()
