"""Runs a generator against real clients and a nemesis, recording the history.

One interpreter thread owns the generator and the context; each client thread
and the nemesis thread has a worker (``harness.workers``) with a one-op inbox,
and completions come back on one shared queue. The loop follows Jepsen's
``generator/interpreter``:

1. handle every waiting completion first, because they are latency
   sensitive: a completion noticed late would create false concurrency;
2. otherwise ask the generator for an op; wait for its time (still handling
   completions), stamp it with ``index`` and ``time`` and hand it to its
   thread's worker;
3. when the generator is exhausted and nothing is in flight, stop.

Every invocation and completion is passed to ``journal`` the moment it is
stamped, so a run killed half-way leaves every op it made on disk. A thread
whose op ends ``info`` (or ``end_process``) continues as a new process.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.generator.context import NEMESIS, Context
from harness.generator.core import PENDING, GenLike, OpDict, lift
from harness.protocols import Client, Nemesis
from harness.workers import STOP, ClientWorker, NemesisWorker, spawn

log = logging.getLogger(__name__)

PENDING_WAIT_S = 0.001
MAX_WAIT_S = 0.1


@dataclass
class Counts:
    """Live counters for a progress display; written only by the interpreter."""

    invoked: int = 0
    completed: dict[str, int] = field(default_factory=lambda: {"ok": 0, "fail": 0, "info": 0})
    in_flight: int = 0


@dataclass
class Outcome:
    """How the run ended: how many history entries were written, and whether
    it was cut short (``stop`` was set, or Ctrl-C) with ops left in flight."""

    entries: int
    interrupted: bool
    abandoned: int


class Interpreter:
    """Drives ``gen`` with ``concurrency`` client threads and a nemesis thread."""

    def __init__(
        self,
        test: Any,
        gen: GenLike,
        *,
        client: Client,
        nemesis: Nemesis,
        concurrency: int,
        journal: Callable[[OpDict], None],
        nodes: Sequence[str] = ("n1",),
        clock: Callable[[], int] = time.monotonic_ns,
        start_ns: int | None = None,
        drain_timeout_s: float = 10.0,
        straggler_timeout_s: float = 120.0,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.test, self.gen = test, lift(gen)
        self.client, self.nemesis = client, nemesis
        self.concurrency, self.journal = concurrency, journal
        self.nodes = list(nodes) or ["n1"]
        self.clock = clock
        self.start_ns = clock() if start_ns is None else start_ns
        self.drain_timeout_s = drain_timeout_s
        # A client call that never returns must not hang the run: once the
        # generator is exhausted, ops still running after this long are left
        # without a completion, which a checker reads as unknown.
        self.straggler_timeout_s = straggler_timeout_s
        self.abandoned = 0
        self.stop = threading.Event()
        self.counts = Counts()
        self._completions: queue.SimpleQueue[tuple[Any, OpDict | None]] = queue.SimpleQueue()
        self._index = 0

    def now(self) -> int:
        return self.clock() - self.start_ns

    def _record(self, op: OpDict) -> None:
        op["index"] = self._index
        self._index += 1
        self.journal(op)

    def run(self) -> Outcome:
        """Runs until the generator is exhausted or ``stop`` is set; Ctrl-C
        (KeyboardInterrupt) counts as ``stop``."""
        inboxes: dict[Any, queue.SimpleQueue[Any]] = {}
        put = self._completions.put
        for t in range(self.concurrency):
            worker = ClientWorker(self.test, self.client, self.nodes[t % len(self.nodes)])
            inboxes[t] = spawn(t, worker, put)[0]
        inboxes[NEMESIS] = spawn(NEMESIS, NemesisWorker(self.test, self.nemesis), put)[0]
        interrupted = False
        try:
            self._loop(inboxes)
        except KeyboardInterrupt:
            interrupted = True
        interrupted = interrupted or self.stop.is_set()
        abandoned = self._drain() if interrupted else self.abandoned
        for inbox in inboxes.values():
            inbox.put(STOP)
        return Outcome(self._index, interrupted, abandoned)

    def _loop(self, inboxes: dict[Any, queue.SimpleQueue[Any]]) -> None:
        ctx = Context.initial(self.concurrency, nemesis=True)
        gen, test, counts = self.gen, self.test, self.counts
        exhausted = 0.0  # when the generator first had nothing more to give
        completions = self._completions
        while not self.stop.is_set():
            try:
                item = completions.get_nowait()
            except queue.Empty:
                item = None
            if item is not None:
                ctx, gen = self._complete(ctx, gen, item)
                continue
            ctx = ctx.with_time(self.now())
            r = gen.op(test, ctx) if gen is not None else None
            if r is None or r is PENDING:
                if r is None and counts.in_flight == 0:
                    return
                if r is None:
                    exhausted = exhausted or time.monotonic()
                    if time.monotonic() - exhausted > self.straggler_timeout_s:
                        log.warning(
                            "%d op(s) still running %.0f s after the last op was "
                            "issued; leaving them without a completion (unknown)",
                            counts.in_flight,
                            self.straggler_timeout_s,
                        )
                        self.abandoned = counts.in_flight
                        return
                try:
                    item = completions.get(timeout=PENDING_WAIT_S if r is PENDING else MAX_WAIT_S)
                except queue.Empty:
                    continue
                ctx, gen = self._complete(ctx, gen, item)
                continue
            o, nxt = r  # type: ignore[misc]
            wait = o["time"] - ctx.time
            if wait > 0:
                # wait in short slices, so a stop request is noticed promptly
                try:
                    item = completions.get(timeout=min(wait / 1e9, MAX_WAIT_S))
                except queue.Empty:
                    if o["time"] > self.now():
                        continue
                else:  # something finished first: handle it, then ask again
                    ctx, gen = self._complete(ctx, gen, item)
                    continue
            thread = ctx.thread_of(o["process"])
            kind = o["type"]
            if kind == "log":
                log.info("%s", o["value"])
                gen = nxt
                continue
            ctx = ctx.with_time(self.now()).busy(thread)
            o["time"] = ctx.time
            if kind != "sleep":
                self._record(o)
                counts.invoked += 1
                nxt = nxt.update(test, ctx, o) if nxt is not None else None
            gen = nxt
            counts.in_flight += 1
            inboxes[thread].put(o)

    def _complete(self, ctx: Context, gen: Any, item: tuple[Any, OpDict | None]) -> Any:
        thread, done = item
        self.counts.in_flight -= 1
        ctx = ctx.with_time(self.now())
        if done is None:  # a sleep ended
            return ctx.freed(thread), gen
        done["time"] = ctx.time
        self._record(done)
        kind = done["type"]
        self.counts.completed[kind] = self.counts.completed.get(kind, 0) + 1
        ctx = ctx.freed(thread, kind == "info" or bool(done.get("end_process")))
        return ctx, (gen.update(self.test, ctx, done) if gen is not None else None)

    def _drain(self) -> int:
        """After a stop: records completions of ops still running, for at most
        ``drain_timeout_s``; returns how many never completed."""
        deadline = time.monotonic() + self.drain_timeout_s
        while self.counts.in_flight > 0:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                _, done = self._completions.get(timeout=left)
            except queue.Empty:
                break
            self.counts.in_flight -= 1
            if done is not None:
                done["time"] = self.now()
                self._record(done)
                self.counts.completed[done["type"]] = self.counts.completed.get(done["type"], 0) + 1
        return self.counts.in_flight


def run(test: Any, gen: GenLike, **kwargs: Any) -> Outcome:
    """Builds an :class:`Interpreter` and runs it (see its arguments)."""
    return Interpreter(test, gen, **kwargs).run()
