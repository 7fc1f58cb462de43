"""Combinators about *when*: stagger, delay, time limits, sleep and log.

Times are nanoseconds since the test started. An op's ``time`` is the
earliest moment the interpreter may invoke it; the interpreter waits until
then (while still handling completions).
"""

from __future__ import annotations

import copy
from typing import Any

from generator.context import Context
from generator.core import PENDING, Generator, GenLike, OneOp, OpDict, OpResult, lift
from generator.rand import Rand

NS_PER_S = 1_000_000_000


def seconds(dt: float) -> int:
    """Seconds as integer nanoseconds."""
    return int(dt * NS_PER_S)


class _Retimed(Generator):
    """A wrapper that passes each op of its child on with a new time and keeps
    its own timing state; events go to the child unchanged."""

    __slots__ = ("gen",)
    gen: Generator | None

    def op(self, test: Any, ctx: Context) -> OpResult:
        if self.gen is None or self.expired(ctx):
            return None
        r = self.gen.op(test, ctx)
        if r is None or r is PENDING:
            return r
        o, nxt = r  # type: ignore[misc]
        return self.retime(ctx, o, nxt)

    def expired(self, ctx: Context) -> bool:
        return False

    def retime(self, ctx: Context, o: OpDict, nxt: Generator | None) -> OpResult:
        raise NotImplementedError

    def update(self, test: Any, ctx: Context, event: OpDict) -> Generator | None:
        if self.gen is None:
            return self
        clone = copy.copy(self)
        clone.gen = self.gen.update(test, ctx, event)
        return clone


class Stagger(_Retimed):
    """Spaces ops a random 0..2·dt apart, so ``dt`` is the mean interval for
    the whole generator: a *total* rate of 1/dt across all threads."""

    __slots__ = ("dt2", "next_time", "rand")

    def __init__(self, dt2: int, gen: Generator | None, next_time: int | None, rand: Rand) -> None:
        self.dt2, self.gen, self.next_time, self.rand = dt2, gen, next_time, rand

    def retime(self, ctx: Context, o: OpDict, nxt: Generator | None) -> OpResult:
        start = ctx.time if self.next_time is None else self.next_time
        at = max(o["time"], start)
        gap, rand = self.rand.below(self.dt2) if self.dt2 > 0 else (0, self.rand)
        return {**o, "time": at}, Stagger(self.dt2, nxt, start + gap, rand)


def stagger(dt: float, gen: GenLike, rand: Rand) -> Generator:
    """Ops at random intervals averaging ``dt`` seconds (total, not per thread)."""
    return Stagger(2 * seconds(dt), lift(gen), None, rand)


class Delay(_Retimed):
    """Ops at least ``dt`` apart, starting now."""

    __slots__ = ("dt", "next_time")

    def __init__(self, dt: int, gen: Generator | None, next_time: int | None) -> None:
        self.dt, self.gen, self.next_time = dt, gen, next_time

    def retime(self, ctx: Context, o: OpDict, nxt: Generator | None) -> OpResult:
        at = max(o["time"], ctx.time if self.next_time is None else self.next_time)
        return {**o, "time": at}, Delay(self.dt, nxt, at + self.dt)


def delay(dt: float, gen: GenLike) -> Generator:
    return Delay(seconds(dt), lift(gen), None)


class TimeLimit(_Retimed):
    """Ops from the child until ``dt`` after the time of its first op."""

    __slots__ = ("cutoff", "dt")

    def __init__(self, dt: int, gen: Generator | None, cutoff: int | None) -> None:
        self.dt, self.gen, self.cutoff = dt, gen, cutoff

    def expired(self, ctx: Context) -> bool:
        return self.cutoff is not None and ctx.time >= self.cutoff

    def retime(self, ctx: Context, o: OpDict, nxt: Generator | None) -> OpResult:
        cutoff = o["time"] + self.dt if self.cutoff is None else self.cutoff
        if o["time"] >= cutoff:
            return None
        return o, TimeLimit(self.dt, nxt, cutoff)


def time_limit(dt: float, gen: GenLike) -> Generator:
    return TimeLimit(seconds(dt), lift(gen), None)


def sleep(dt: float) -> Generator:
    """One thread sleeps ``dt`` seconds (a pseudo-op the history never shows);
    inside ``phases`` this pauses the whole test."""
    return OneOp({"type": "sleep", "value": seconds(dt)})


def log(message: str) -> Generator:
    """Logs a message when reached (a pseudo-op the history never shows)."""
    return OneOp({"type": "log", "value": message})


def op_timeout(dt: float) -> Generator:
    """From here on, a client op without an answer after ``dt`` seconds
    completes ``info`` (a pseudo-op the history never shows): the final reads
    must not wait out a main-phase budget for one client stuck in its
    library. Nemesis ops keep the interpreter's own bound."""
    return OneOp({"type": "op-timeout", "value": seconds(dt)})


class Timeline(Generator):
    """Ops at fixed times (ns since the test started): how a precomputed,
    seeded fault schedule is played. The times are absolute on purpose: a
    generator cannot learn when a phase began from an ``op`` call that did not
    yield (``any_`` may prefer another child), so a relative anchor would drift."""

    __slots__ = ("entries", "pos")

    def __init__(self, entries: tuple[tuple[int, OpDict], ...], pos: int) -> None:
        self.entries, self.pos = entries, pos

    def op(self, test: Any, ctx: Context) -> OpResult:
        if self.pos >= len(self.entries):
            return None
        process = ctx.some_free_process()
        if process is None:
            return PENDING
        at, template = self.entries[self.pos]
        o = {**template, "type": "invoke", "process": process, "time": max(at, ctx.time)}
        return o, Timeline(self.entries, self.pos + 1)


def timeline(schedule: list[tuple[float, OpDict]], start: float = 0.0) -> Generator:
    """A generator from ``[(seconds, op_template), ...]``, the seconds counted
    from ``start`` seconds after the test started."""
    entries = sorted(((seconds(start + t), dict(o)) for t, o in schedule), key=lambda e: e[0])
    return Timeline(tuple(entries), 0)
