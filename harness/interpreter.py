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

However the run ends, each worker then closes its client (a client left open
keeps reconnecting to a cluster about to be torn down), and the run waits
for the current ones to, up to ``close_timeout_s``; a worker replaced when
its op timed out is stuck in a call and left to it.

Every invocation and completion is passed to ``journal`` the moment it is
stamped, so a run killed half-way leaves every op it made on disk. A thread
whose op ends ``info`` (or ``end_process``) continues as a new process.
"""

from __future__ import annotations

import logging
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from generator.context import NEMESIS, Context
from generator.core import PENDING, GenLike, OpDict, lift
from harness.protocols import Client, Nemesis
from harness.workers import STOP, ClientWorker, NemesisWorker, spawn

log = logging.getLogger(__name__)

PENDING_WAIT_S = 0.001
MAX_WAIT_S = 0.1
TIMEOUT_CHECK_NS = 100_000_000


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
        op_timeout_s: float = 60.0,
        nemesis_timeout_s: float = 60.0,
        close_timeout_s: float = 10.0,
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
        self.close_timeout_s = close_timeout_s
        # A client call that never returns (librdkafka can block past its own
        # timeouts while brokers die) must not hang the run: after this long
        # the op completes ``info`` and the thread gets a fresh worker and
        # process, as Jepsen's client/timeout does. The stuck call is left to
        # finish (or not) on its daemon thread; its answer is then ignored.
        self.op_timeout_ns = int(op_timeout_s * 1e9)
        # a nemesis op has its own bound: a restart waits up to a minute for
        # its brokers, and a second nemesis worker must not start beside it
        self.nemesis_timeout_ns = int(nemesis_timeout_s * 1e9)
        self.stop = threading.Event()
        self.counts = Counts()
        self._completions: queue.SimpleQueue[tuple[Any, OpDict | None]] = queue.SimpleQueue()
        self._index = 0
        self._inboxes: dict[Any, queue.SimpleQueue[Any]] = {}
        self._workers: list[threading.Thread] = []  # every worker thread, replaced ones too
        self._current: dict[Any, threading.Thread] = {}  # thread -> its current worker's
        self._worker_ids: dict[Any, int] = {}  # thread -> id of its current worker
        self._running: dict[Any, OpDict] = {}  # thread -> op it is running
        self._next_timeout_check = 0

    def now(self) -> int:
        return self.clock() - self.start_ns

    def _record(self, op: OpDict) -> None:
        op["index"] = self._index
        self._index += 1
        self.journal(op)

    def run(self) -> Outcome:
        """Runs until the generator is exhausted or ``stop`` is set; Ctrl-C
        (KeyboardInterrupt) counts as ``stop``."""
        interrupted = False
        try:
            for t in [*range(self.concurrency), NEMESIS]:
                self._spawn(t)
            try:
                self._loop(self._inboxes)
            except KeyboardInterrupt:
                interrupted = True
            interrupted = interrupted or self.stop.is_set()
            abandoned = self._drain() if interrupted else 0
        finally:
            self._stop_workers()
        return Outcome(self._index, interrupted, abandoned)

    def _stop_workers(self) -> None:
        """Stops every worker and waits until the current ones have closed
        their clients, at most ``close_timeout_s`` in all; one stuck in a call
        is left to it on its daemon thread, client open. A worker replaced
        when its op timed out is stuck already and is not waited for here
        (``await_workers`` is, where it matters)."""
        for inbox in self._inboxes.values():
            inbox.put(STOP)
        stuck = self._await(self._current.values(), self.close_timeout_s)
        if stuck:
            log.warning(
                "%d worker(s) still in a call %g s after the run, their clients open: %s",
                len(stuck),
                self.close_timeout_s,
                ", ".join(stuck),
            )

    def await_workers(self, timeout_s: float) -> list[str]:
        """Waits, ``timeout_s`` at most in all, for the workers still in a
        call; each closes its client once its call returns. A librdkafka call
        can outlive its own timeout while a coordinator is away (librdkafka
        #5456) and return only when brokers change state, e.g. once the
        cluster is gone. Returns the names of those still running."""
        return self._await(self._workers, timeout_s)

    @staticmethod
    def _await(workers: Collection[threading.Thread], timeout_s: float) -> list[str]:
        deadline = time.monotonic() + timeout_s
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        return [w.name for w in workers if w.is_alive()]

    def _spawn(self, thread: Any) -> None:
        """A new worker for ``thread``; its completions are tagged with its id
        so that answers from a replaced (stuck) worker are recognised."""
        worker_id = self._worker_ids.get(thread, -1) + 1
        self._worker_ids[thread] = worker_id
        worker: ClientWorker | NemesisWorker
        if thread == NEMESIS:
            worker = NemesisWorker(self.test, self.nemesis)
        else:
            worker = ClientWorker(self.test, self.client, self.nodes[thread % len(self.nodes)])
        inbox, worker_thread = spawn((thread, worker_id), worker, self._completions.put)
        self._inboxes[thread] = inbox
        self._workers.append(worker_thread)
        self._current[thread] = worker_thread

    def _time_out(self, ctx: Context, gen: Any) -> tuple[Context, Any]:
        """Completes ops running longer than their timeout as ``info``."""
        now = self.now()
        for thread, op in list(self._running.items()):
            limit_ns = self.nemesis_timeout_ns if thread == NEMESIS else self.op_timeout_ns
            if now - op["time"] < limit_ns:
                continue
            timeout_s = limit_ns / 1e9
            where = stuck_in(self._current[thread])
            log.warning(
                "process %s: %s got no answer in %.0f s; recorded as unknown (stuck in %s)",
                op["process"],
                op["f"],
                timeout_s,
                where,
            )
            self._inboxes[thread].put(STOP)  # the stuck worker exits if it ever returns
            self._spawn(thread)
            done = {
                **op,
                "type": "info",
                "error": f"timeout: no answer in {timeout_s:g} s",
                "stuck_in": where,  # kept in the history, to trace the stall later
                "end_process": True,
            }
            ctx, gen = self._complete(ctx, gen, ((thread, self._worker_ids[thread]), done))
        return ctx, gen

    def _loop(self, inboxes: dict[Any, queue.SimpleQueue[Any]]) -> None:
        ctx = Context.initial(self.concurrency, nemesis=True)
        gen, test, counts = self.gen, self.test, self.counts
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
            if ctx.time >= self._next_timeout_check and self._running:
                self._next_timeout_check = ctx.time + TIMEOUT_CHECK_NS
                ctx, gen = self._time_out(ctx, gen)
            r = gen.op(test, ctx) if gen is not None else None
            if r is None or r is PENDING:
                if r is None and counts.in_flight == 0:
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
            if kind == "op-timeout":
                self.op_timeout_ns = int(o["value"])
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
            self._running[thread] = o
            inboxes[thread].put(o)

    def _complete(self, ctx: Context, gen: Any, item: tuple[Any, OpDict | None]) -> Any:
        (thread, worker_id), done = item
        if worker_id != self._worker_ids[thread]:
            return ctx, gen  # a replaced worker's late answer: already recorded as info
        self._running.pop(thread, None)
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
                (thread, worker_id), done = self._completions.get(timeout=left)
            except queue.Empty:
                break
            if worker_id != self._worker_ids[thread]:
                continue
            self.counts.in_flight -= 1
            if done is not None:
                done["time"] = self.now()
                self._record(done)
                self.counts.completed[done["type"]] = self.counts.completed.get(done["type"], 0) + 1
        return self.counts.in_flight


def stuck_in(worker: threading.Thread) -> str:
    """The innermost calls a worker is in, for the log: which client call
    never returned (a librdkafka hang) without a stack dump of every thread."""
    frame = sys._current_frames().get(worker.ident or 0)
    if frame is None:
        return "nothing (it has just returned)"
    calls = traceback.extract_stack(frame)[-4:][::-1]
    return " <- ".join(f"{c.name} ({c.filename.rsplit('/', 1)[-1]}:{c.lineno})" for c in calls)


def run(test: Any, gen: GenLike, **kwargs: Any) -> Outcome:
    """Builds an :class:`Interpreter` and runs it (see its arguments)."""
    return Interpreter(test, gen, **kwargs).run()
