"""The generator protocol and the plain values that act as generators.

A generator says what to do next, purely (Jepsen's ``jepsen.generator``):

* ``op(test, ctx)`` returns ``None`` when exhausted, ``PENDING`` when it has
  nothing to do *yet* (e.g. no thread it may use is free), or ``(op, gen2)``:
  an op dict to invoke and the generator to use afterwards. Asking twice gives
  the same answer; nothing changes until the caller keeps ``gen2``.
* ``update(test, ctx, event)`` returns the generator after an invocation or a
  completion happened, so generators can react to results.

An op dict carries ``type`` (``"invoke"``, or ``"sleep"``/``"log"``/``"op-timeout"``
for the interpreter's own pseudo-ops), ``process``, ``time`` (ns since the test
started, the earliest time it may run) and ``f``/``value``. Time comes only
from ``ctx``, randomness only from a :class:`~generator.rand.Rand` a
generator carries: that is what makes a run replay exactly from its seed.

Plain values lift to generators: ``None`` is empty, a ``dict`` is one op
(filled in with a free process and the current time), a ``list``/``tuple``
runs each element to exhaustion in turn, and a callable (no arguments, or
``test, ctx``) is called again whenever the generator it returned is done. A
callable may be asked more than once for the same op, so it must be pure.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from generator.context import Context

OpDict = dict[str, Any]


class _Pending:
    __slots__ = ()

    def __repr__(self) -> str:
        return "PENDING"


PENDING = _Pending()


class Generator:
    """Base class: subclasses implement ``op`` and, if they react to events,
    ``update``. Instances are never mutated after construction."""

    __slots__ = ()

    def op(self, test: Any, ctx: Context) -> OpResult:
        raise NotImplementedError

    def update(self, test: Any, ctx: Context, event: OpDict) -> Generator | None:
        return self


OpResult = None | _Pending | tuple[OpDict, Generator | None]
GenLike = Generator | OpDict | Sequence[Any] | Callable[..., Any] | None


def lift(x: GenLike) -> Generator | None:
    """Turns a plain value into a generator (see the module docstring)."""
    if x is None or isinstance(x, Generator):
        return x
    if isinstance(x, dict):
        return OneOp(x)
    if isinstance(x, list | tuple):
        return Seq.of(x)
    if callable(x):
        return Fn(x)
    raise TypeError(f"cannot use {type(x).__name__} {x!r} as a generator")


def op(gen: Generator | None, test: Any, ctx: Context) -> OpResult:
    return None if gen is None else gen.op(test, ctx)


def update(gen: Generator | None, test: Any, ctx: Context, event: OpDict) -> Generator | None:
    return None if gen is None else gen.update(test, ctx, event)


def fill_in(template: OpDict, ctx: Context) -> OpDict | None:
    """The template as an invocation by some free process now, or None when
    no thread in view is free. Keys the template sets win."""
    process = ctx.some_free_process()
    if process is None:
        return None
    out = {"type": "invoke", "process": process, "time": ctx.time}
    out.update(template)
    return out


class OneOp(Generator):
    """A dict: a single op."""

    __slots__ = ("template",)

    def __init__(self, template: OpDict) -> None:
        self.template = template

    def op(self, test: Any, ctx: Context) -> OpResult:
        filled = fill_in(self.template, ctx)
        return PENDING if filled is None else (filled, None)

    def __repr__(self) -> str:
        return f"OneOp({self.template!r})"


class Seq(Generator):
    """Runs each element to exhaustion in turn; only the current one sees updates.

    The remaining elements are lifted lazily, so a long literal list of ops
    costs O(1) per op.
    """

    __slots__ = ("current", "pos", "rest")

    def __init__(self, current: Generator | None, rest: Sequence[Any], pos: int) -> None:
        self.current = current
        self.rest = rest
        self.pos = pos

    @classmethod
    def of(cls, items: Sequence[Any]) -> Seq | None:
        if not items:
            return None
        return cls(lift(items[0]), items, 1)

    def op(self, test: Any, ctx: Context) -> OpResult:
        current, pos = self.current, self.pos
        while True:
            if current is not None:
                r = current.op(test, ctx)
                if r is not None:
                    if r is PENDING:
                        return PENDING
                    o, nxt = r  # type: ignore[misc]
                    return o, Seq(nxt, self.rest, pos)
            if pos >= len(self.rest):
                return None
            current, pos = lift(self.rest[pos]), pos + 1

    def update(self, test: Any, ctx: Context, event: OpDict) -> Generator | None:
        if self.current is None:
            return self
        return Seq(self.current.update(test, ctx, event), self.rest, self.pos)


class Fn(Generator):
    """A callable; its result is used as a generator, then it is called again."""

    __slots__ = ("fn", "takes_args")

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        try:
            self.takes_args = bool(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            self.takes_args = True

    def op(self, test: Any, ctx: Context) -> OpResult:
        produced = lift(self.fn(test, ctx) if self.takes_args else self.fn())
        r = op(produced, test, ctx)
        if r is None or r is PENDING:
            return r
        o, nxt = r  # type: ignore[misc]
        return o, Seq(nxt, (self,), 0) if nxt is not None else self
