"""Runs a generator against a virtual clock, with no cluster and no threads.

This is how generators are tested (Jepsen's ``generator.test/simulate``): the
result is the history the interpreter would record if every op took exactly
``latency`` ns and completed as ``complete`` says. Same generator, same
arguments, same history — always.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from generator.context import Context
from generator.core import PENDING, GenLike, OpDict, lift

PSEUDO_TYPES = frozenset({"sleep", "log", "op-timeout"})


def ok_completion(invocation: OpDict) -> OpDict:
    """Every op succeeds with its value unchanged."""
    return {**invocation, "type": "ok"}


class Deadlock(RuntimeError):
    """The generator is pending while nothing is running: it would wait forever."""


def simulate(
    gen: GenLike,
    *,
    concurrency: int = 2,
    nemesis: bool = True,
    test: Any = None,
    complete: Callable[[OpDict], OpDict] = ok_completion,
    latency: int = 0,
    max_ops: int = 1_000_000,
) -> list[OpDict]:
    """The history (invocations and completions, with ``index``) of ``gen``.

    ``complete`` maps an invocation to its completion; a completion may set
    its own ``time`` (else invocation time + ``latency``). An ``info``
    completion, or one with ``end_process``, moves the thread to a new process.
    """
    g = lift(gen)
    ctx = Context.initial(concurrency, nemesis)
    history: list[OpDict] = []
    in_flight: list[tuple[int, int, Any, OpDict | None]] = []
    seq = 0
    while len(history) < max_ops:
        r = g.op(test, ctx) if g is not None else None
        due = in_flight[0][0] if in_flight else None
        if r is None or r is PENDING or (due is not None and due <= r[0]["time"]):  # type: ignore[index]
            if due is None:
                if r is None:
                    break
                raise Deadlock(f"generator pending at t={ctx.time} with nothing in flight")
            t, _, thread, done = heapq.heappop(in_flight)
            ctx = ctx.with_time(max(ctx.time, t))
            if done is None:
                ctx = ctx.freed(thread)
                continue
            done = {**done, "index": len(history)}
            history.append(done)
            ctx = ctx.freed(thread, done["type"] == "info" or bool(done.get("end_process")))
            g = g.update(test, ctx, done) if g is not None else None
            continue
        o, g = r  # type: ignore[misc]
        ctx = ctx.with_time(max(ctx.time, o["time"]))
        thread = ctx.thread_of(o["process"])
        ctx = ctx.busy(thread)
        seq += 1
        if o["type"] in PSEUDO_TYPES:
            wait = o["value"] if o["type"] == "sleep" else 0
            heapq.heappush(in_flight, (ctx.time + wait, seq, thread, None))
            continue
        o = {**o, "time": ctx.time, "index": len(history)}
        history.append(o)
        g = g.update(test, ctx, o) if g is not None else None
        done = complete(o)
        done.setdefault("time", o["time"])
        if done["time"] <= o["time"]:
            done["time"] = o["time"] + latency
        heapq.heappush(in_flight, (done["time"], seq, thread, done))
    return history


def invocations(history: list[OpDict]) -> list[OpDict]:
    return [o for o in history if o["type"] == "invoke"]
