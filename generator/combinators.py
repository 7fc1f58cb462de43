"""Combinators that route, choose, limit and sequence generators.

Each is a small immutable class plus a lower-case constructor that lifts its
arguments; the constructors are the public API. Timing combinators (stagger,
delay, time limits, sleep) live in :mod:`generator.timing`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from generator.context import (
    Context,
    Thread,
    is_client_thread,
    is_nemesis_thread,
)
from generator.core import (
    PENDING,
    Generator,
    GenLike,
    OpDict,
    OpResult,
    Seq,
    lift,
)
from generator.rand import Rand

COMPLETION_TYPES = frozenset({"ok", "fail", "info"})


def _soonest(results: list[tuple[int, OpResult]]) -> tuple[int, OpResult]:
    """Of several generators' answers, the op with the earliest time (ties go
    to the first); else PENDING if any is pending; else (-1, None)."""
    best: tuple[int, OpResult] = (-1, None)
    for i, r in results:
        if r is None:
            continue
        if r is PENDING:
            if best[1] is None:
                best = (i, PENDING)
            continue
        if best[1] is None or best[1] is PENDING or r[0]["time"] < best[1][0]["time"]:  # type: ignore[index]
            best = (i, r)
    return best


class MapOps(Generator):
    """Applies ``fn`` to every op the child emits."""

    __slots__ = ("fn", "gen")

    def __init__(self, fn: Callable[[OpDict], OpDict], gen: Generator | None) -> None:
        self.fn, self.gen = fn, gen

    def op(self, test: Any, ctx: Context) -> OpResult:
        r = self.gen.op(test, ctx) if self.gen is not None else None
        if r is None or r is PENDING:
            return r
        o, nxt = r  # type: ignore[misc]
        return self.fn(o), MapOps(self.fn, nxt)

    def update(self, test: Any, ctx: Context, event: OpDict) -> Generator | None:
        return MapOps(self.fn, self.gen.update(test, ctx, event)) if self.gen else self


def map_ops(fn: Callable[[OpDict], OpDict], gen: GenLike) -> Generator:
    return MapOps(fn, lift(gen))


class FilterOps(Generator):
    """Drops the child's ops for which ``pred`` is false."""

    __slots__ = ("gen", "pred")

    def __init__(self, pred: Callable[[OpDict], bool], gen: Generator | None) -> None:
        self.pred, self.gen = pred, gen

    def op(self, test: Any, ctx: Context) -> OpResult:
        gen = self.gen
        while gen is not None:
            r = gen.op(test, ctx)
            if r is None or r is PENDING:
                return r
            o, gen = r  # type: ignore[misc]
            if self.pred(o):
                return o, FilterOps(self.pred, gen)
        return None

    def update(self, test: Any, ctx: Context, event: OpDict) -> Generator | None:
        return FilterOps(self.pred, self.gen.update(test, ctx, event)) if self.gen else self


def filter_ops(pred: Callable[[OpDict], bool], gen: GenLike) -> Generator:
    return FilterOps(pred, lift(gen))


class OnThreads(Generator):
    """The child sees only the threads for which ``keep`` is true, and only
    their events."""

    __slots__ = ("gen", "keep")

    def __init__(self, keep: Callable[[Thread], bool], gen: Generator | None) -> None:
        self.keep, self.gen = keep, gen

    def op(self, test: Any, ctx: Context) -> OpResult:
        if self.gen is None:
            return None
        r = self.gen.op(test, ctx.restrict(self.keep))
        if r is None or r is PENDING:
            return r
        o, nxt = r  # type: ignore[misc]
        return o, OnThreads(self.keep, nxt)

    def update(self, test: Any, ctx: Context, event: OpDict) -> Generator | None:
        if self.gen is None or not self.keep(ctx.thread_of(event["process"])):
            return self
        return OnThreads(self.keep, self.gen.update(test, ctx.restrict(self.keep), event))


def on_threads(keep: Callable[[Thread], bool], gen: GenLike) -> Generator:
    return OnThreads(keep, lift(gen))


def on_clients(gen: GenLike) -> Generator:
    """Only client threads run this generator."""
    return OnThreads(is_client_thread, lift(gen))


def on_nemesis(gen: GenLike) -> Generator:
    """Only the nemesis thread runs this generator."""
    return OnThreads(is_nemesis_thread, lift(gen))


class Any_(Generator):
    """Whichever child has the soonest op; every child sees every update."""

    __slots__ = ("gens",)

    def __init__(self, gens: tuple[Generator, ...]) -> None:
        self.gens = gens

    def op(self, test: Any, ctx: Context) -> OpResult:
        i, r = _soonest([(i, g.op(test, ctx)) for i, g in enumerate(self.gens)])
        if r is None or r is PENDING:
            return r
        o, nxt = r  # type: ignore[misc]
        gens = self.gens[:i] + ((nxt,) if nxt is not None else ()) + self.gens[i + 1 :]
        return o, Any_(gens) if gens else None

    def update(self, test: Any, ctx: Context, event: OpDict) -> Generator | None:
        gens = tuple(g2 for g in self.gens if (g2 := g.update(test, ctx, event)) is not None)
        return Any_(gens) if gens else None


def any_(*gens: GenLike) -> Generator | None:
    lifted = tuple(g for g in map(lift, gens) if g is not None)
    return Any_(lifted) if lifted else None


def with_nemesis(nemesis_gen: GenLike, client_gen: GenLike) -> Generator | None:
    """Runs ``nemesis_gen`` on the nemesis thread alongside ``client_gen`` on
    the client threads (Jepsen's ``(nemesis nem-gen client-gen)``)."""
    return any_(on_nemesis(nemesis_gen), on_clients(client_gen))


class EachThread(Generator):
    """Every thread in view runs its own copy of ``fresh``; exhausted when all
    copies are."""

    __slots__ = ("fresh", "gens")

    def __init__(self, fresh: Generator | None, gens: dict[Thread, Generator | None]) -> None:
        self.fresh, self.gens = fresh, gens

    def op(self, test: Any, ctx: Context) -> OpResult:
        results = []
        for idx, t in enumerate(ctx.threads):
            g = self.gens.get(t, self.fresh)
            results.append((idx, None if g is None else g.op(test, ctx.only(t))))
        i, r = _soonest(results)
        if r is None or r is PENDING:
            return r
        o, nxt = r  # type: ignore[misc]
        gens = dict(self.gens)
        gens[ctx.threads[i]] = nxt
        return o, EachThread(self.fresh, gens)

    def update(self, test: Any, ctx: Context, event: OpDict) -> Generator | None:
        t = ctx.thread_of(event["process"])
        if t not in ctx.threads:
            return self
        g = self.gens.get(t, self.fresh)
        if g is None:
            return self
        gens = dict(self.gens)
        gens[t] = g.update(test, ctx.only(t), event)
        return EachThread(self.fresh, gens)


def each_thread(gen: GenLike) -> Generator:
    return EachThread(lift(gen), {})


class Mix(Generator):
    """A random child for each op; exhausted children drop out. Updates are
    not passed on (as in Jepsen), so children should not depend on them."""

    __slots__ = ("gens", "rand")

    def __init__(self, gens: tuple[Generator, ...], rand: Rand) -> None:
        self.gens, self.rand = gens, rand

    def op(self, test: Any, ctx: Context) -> OpResult:
        gens, rand = self.gens, self.rand
        while gens:
            i, rand2 = rand.below(len(gens))
            r = gens[i].op(test, ctx)
            if r is PENDING:
                return PENDING
            if r is None:
                gens, rand = gens[:i] + gens[i + 1 :], rand2
                continue
            o, nxt = r  # type: ignore[misc]
            rest = gens[:i] + ((nxt,) if nxt is not None else ()) + gens[i + 1 :]
            return o, Mix(rest, rand2)
        return None


def mix(gens: Sequence[GenLike], rand: Rand) -> Generator | None:
    lifted = tuple(g for g in map(lift, gens) if g is not None)
    return Mix(lifted, rand) if lifted else None


class Limit(Generator):
    """At most ``remaining`` ops from the child."""

    __slots__ = ("gen", "remaining")

    def __init__(self, remaining: int, gen: Generator | None) -> None:
        self.remaining, self.gen = remaining, gen

    def op(self, test: Any, ctx: Context) -> OpResult:
        if self.remaining <= 0 or self.gen is None:
            return None
        r = self.gen.op(test, ctx)
        if r is None or r is PENDING:
            return r
        o, nxt = r  # type: ignore[misc]
        return o, Limit(self.remaining - 1, nxt)

    def update(self, test: Any, ctx: Context, event: OpDict) -> Generator | None:
        return Limit(self.remaining, self.gen.update(test, ctx, event)) if self.gen else self


def limit(n: int, gen: GenLike) -> Generator:
    return Limit(n, lift(gen))


def once(gen: GenLike) -> Generator:
    return Limit(1, lift(gen))


class Repeat(Generator):
    """The child's *first* op, over and over (``remaining`` < 0: forever)."""

    __slots__ = ("gen", "remaining")

    def __init__(self, remaining: int, gen: Generator | None) -> None:
        self.remaining, self.gen = remaining, gen

    def op(self, test: Any, ctx: Context) -> OpResult:
        if self.remaining == 0 or self.gen is None:
            return None
        r = self.gen.op(test, ctx)
        if r is None or r is PENDING:
            return r
        return r[0], Repeat(self.remaining - 1, self.gen)  # type: ignore[index]


def repeat(gen: GenLike, n: int = -1) -> Generator:
    return Repeat(n, lift(gen))


class FlipFlop(Generator):
    """Ops alternately from ``a`` and ``b``; ends when the one due is done."""

    __slots__ = ("a", "b")

    def __init__(self, a: Generator | None, b: Generator | None) -> None:
        self.a, self.b = a, b

    def op(self, test: Any, ctx: Context) -> OpResult:
        r = self.a.op(test, ctx) if self.a is not None else None
        if r is None or r is PENDING:
            return r
        o, nxt = r  # type: ignore[misc]
        return o, FlipFlop(self.b, nxt)


def flip_flop(a: GenLike, b: GenLike) -> Generator:
    return FlipFlop(lift(a), lift(b))


class Synchronize(Generator):
    """Waits until every thread in view is free, then becomes the child."""

    __slots__ = ("gen",)

    def __init__(self, gen: Generator | None) -> None:
        self.gen = gen

    def op(self, test: Any, ctx: Context) -> OpResult:
        if self.gen is None:
            return None
        if not ctx.all_free():
            return PENDING
        return self.gen.op(test, ctx)

    def update(self, test: Any, ctx: Context, event: OpDict) -> Generator | None:
        return Synchronize(self.gen.update(test, ctx, event)) if self.gen else self


def synchronize(gen: GenLike) -> Generator:
    return Synchronize(lift(gen))


def phases(*gens: GenLike) -> Generator | None:
    """Each generator in turn, waiting for all threads to finish in between."""
    return Seq.of([Synchronize(lift(g)) for g in gens])


class UntilOk(Generator):
    """Ops from the child until one of them completes ``ok``."""

    __slots__ = ("active", "done", "gen")

    def __init__(self, gen: Generator | None, active: frozenset[Any], done: bool) -> None:
        self.gen, self.active, self.done = gen, active, done

    def op(self, test: Any, ctx: Context) -> OpResult:
        if self.done or self.gen is None:
            return None
        r = self.gen.op(test, ctx)
        if r is None or r is PENDING:
            return r
        o, nxt = r  # type: ignore[misc]
        return o, UntilOk(nxt, self.active | {o["process"]}, False)

    def update(self, test: Any, ctx: Context, event: OpDict) -> Generator | None:
        gen = self.gen.update(test, ctx, event) if self.gen is not None else None
        p = event["process"]
        if p in self.active and event["type"] in COMPLETION_TYPES:
            return UntilOk(gen, self.active - {p}, self.done or event["type"] == "ok")
        return UntilOk(gen, self.active, self.done)


def until_ok(gen: GenLike) -> Generator:
    return UntilOk(lift(gen), frozenset(), False)
