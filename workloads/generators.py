"""Op generators for the queue-family workloads (Jepsen's ``tests/kafka.clj``).

* :class:`QueueOps` — seeded random sends and polls, grouped into
  transactions of up to ``max_txn_length`` micro-ops (outside transactions:
  a single poll or a batch of sends) (Jepsen's txn rewrite of
  list-append, then ``tag-rw``: ``f`` is ``send``/``poll`` when all micro-ops
  agree, else ``txn``); values are unique per key; now and then an op is
  replaced by a re-``assign``/``subscribe`` of random keys (interleave
  subscribes); with an abort chance, a transaction carries ``abort``: it
  runs all its micro-ops, then aborts instead of committing (an abort
  part-way would be a shorter transaction's, and one before any micro-op
  would have nothing to hide). With
  ``max_writes`` a key that has had that many writes is retired and a fresh
  key (one past the highest so far) takes its place (Elle's
  ``max-writes-per-key``), so leader changes keep meeting new partitions
  and each key's history stays short.
* :class:`AssignNewProcesses` — a process's first op subscribes it to every
  key it is given, or to the keys its ``QueueOps`` writes now, so a fresh
  consumer (after a crash) reads something. It draws no randomness, so the
  random schedule does not depend on timing.
* :class:`OffsetTracker` / :func:`track_offsets` — the highest offset known
  per key from the client ops (not the final polls), the target of the
  final polls (Jepsen's ``track-key-offsets``), and every key a send was
  issued to.
* :class:`CatchUp` / :func:`final_polls` — per thread: assign every key
  (those given and those sent to) from the beginning, then poll until this
  process has read up to the target of every key, or its consumer reports
  the partition's end past the target, or the end of a log whose high
  watermark has stayed at or below the target for ``END_STABLE_S``
  (acknowledged records the log lost; an end below the high watermark is
  an open transaction, waited for); an unknown outcome starts over with a
  new process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from generator import (
    NEMESIS,
    PENDING,
    Context,
    Generator,
    GenLike,
    OpDict,
    OpResult,
    Rand,
    each_thread,
    lift,
)
from workloads.keys import sent_keys

FINAL_POLL_MS = 1000
#: a log whose high watermark stays at or below a final read's target for
#: this long ends the reads of it: the target is gone (lost), not yet to come
END_STABLE_S = 5.0


def _offsets(done: OpDict) -> list[tuple[int, int]]:
    """(key, offset) pairs an ok completion proves exist."""
    out: list[tuple[int, int]] = []
    for mop in done.get("value") or []:
        if not isinstance(mop, list) or not mop:
            continue
        if (
            mop[0] == "send"
            and len(mop) == 3
            and isinstance(mop[2], list)
            and mop[2][0] is not None
        ):
            out.append((int(mop[1]), int(mop[2][0])))
        elif mop[0] == "poll" and len(mop) == 2 and isinstance(mop[1], dict):
            for k, recs in mop[1].items():
                if recs:
                    out.append((int(k), max(int(o) for o, _ in recs)))
    return out


class QueueOps(Generator):
    """Random queue ops; see the module docstring."""

    __slots__ = (
        "abort_p",
        "keys",
        "max_len",
        "max_writes",
        "next_values",
        "rand",
        "sub_p",
        "sub_via",
        "txn",
    )

    def __init__(
        self,
        keys: tuple[int, ...],
        rand: Rand,
        *,
        max_len: int = 1,
        txn: bool = False,
        abort_p: float = 0.0,
        sub_p: float = 0.0,
        sub_via: tuple[str, ...] = ("assign",),
        max_writes: int = 0,
        next_values: tuple[int, ...] | None = None,
    ) -> None:
        #: the keys written now (all of them unless ``max_writes`` retires keys)
        self.keys = keys
        self.rand, self.max_len, self.txn = rand, max_len, txn
        self.abort_p, self.sub_p, self.sub_via = abort_p, sub_p, sub_via
        #: writes a key gets before a fresh key replaces it; 0 for never
        self.max_writes = max_writes
        self.next_values = next_values if next_values is not None else (1,) * len(keys)

    def _with(self, rand: Rand, keys: tuple[int, ...], next_values: tuple[int, ...]) -> QueueOps:
        return QueueOps(
            keys,
            rand,
            max_len=self.max_len,
            txn=self.txn,
            abort_p=self.abort_p,
            sub_p=self.sub_p,
            sub_via=self.sub_via,
            max_writes=self.max_writes,
            next_values=next_values,
        )

    def op(self, test: Any, ctx: Context) -> OpResult:
        process = ctx.some_free_process()
        if process is None:
            return PENDING
        rand = self.rand
        resub, rand = rand.chance(self.sub_p)
        if resub:
            via, rand = rand.choice(self.sub_via)
            chosen = []
            for k in self.keys:
                take, rand = rand.chance(0.5)
                if take:
                    chosen.append(k)
            if not chosen:
                i, rand = rand.below(len(self.keys))
                chosen = [self.keys[i]]
            o = {"type": "invoke", "process": process, "time": ctx.time, "f": via, "value": chosen}
            return o, self._with(rand, self.keys, self.next_values)
        n, rand = rand.below(self.max_len)
        keys, values = list(self.keys), list(self.next_values)
        mops: list[list[Any]] = []
        # Outside transactions an op is not atomic, so it never mixes sends
        # and polls: it is one poll or a batch of sends.
        batch_send = None
        if not self.txn:
            batch_send, rand = rand.chance(0.5)
        for _ in range(n + 1 if batch_send is not False else 1):
            send = batch_send
            if send is None:
                send, rand = rand.chance(0.5)
            if send:
                i, rand = rand.below(len(keys))
                mops.append(["send", keys[i], values[i]])
                values[i] += 1
                if self.max_writes and values[i] > self.max_writes:
                    keys[i], values[i] = max(keys) + 1, 1
            else:
                mops.append(["poll"])
        kinds = {m[0] for m in mops}
        f = "txn" if len(kinds) > 1 else kinds.pop()
        o = {"type": "invoke", "process": process, "time": ctx.time, "f": f, "value": mops}
        if self.txn and self.abort_p > 0:
            abort, rand = rand.chance(self.abort_p)
            if abort:
                o["abort"] = True
        return o, self._with(rand, tuple(keys), tuple(values))


class AssignNewProcesses(Generator):
    """Before a process's first op from ``gen``, an op putting it on its keys:
    ``keys`` itself, ``keys(process)`` (no op when that is empty), or with
    ``keys`` None the keys ``gen``, a :class:`QueueOps`, writes now."""

    __slots__ = ("done", "gen", "keys", "via")

    def __init__(
        self,
        gen: Generator | None,
        keys: list[int] | Callable[[Any], list[int]] | None,
        via: str,
        done: frozenset[Any] = frozenset(),
    ) -> None:
        if keys is None and not isinstance(gen, QueueOps | None):
            raise TypeError(f"keys=None follows a QueueOps's keys, not {type(gen).__name__}'s")
        self.gen, self.keys, self.via, self.done = gen, keys, via, done

    def _keys(self, process: Any) -> list[int]:
        if self.keys is None:
            return list(self.gen.keys)  # type: ignore[union-attr]
        return self.keys(process) if callable(self.keys) else list(self.keys)

    def op(self, test: Any, ctx: Context) -> OpResult:
        if self.gen is None:
            return None
        process = ctx.some_free_process()
        if process is not None and process not in self.done:
            keys = self._keys(process)
            if keys:
                o = {
                    "type": "invoke",
                    "process": process,
                    "time": ctx.time,
                    "f": self.via,
                    "value": keys,
                }
                return o, AssignNewProcesses(self.gen, self.keys, self.via, self.done | {process})
        r = self.gen.op(test, ctx)
        if r is None or r is PENDING:
            return r
        o, nxt = r  # type: ignore[misc]
        done = self.done | {o["process"]} if o["process"] not in self.done else self.done
        return o, AssignNewProcesses(nxt, self.keys, self.via, done)

    def update(self, test: Any, ctx: Context, event: OpDict) -> Generator | None:
        if self.gen is None:
            return self
        return AssignNewProcesses(self.gen.update(test, ctx, event), self.keys, self.via, self.done)


class OffsetTracker:
    """The highest offset known per key (from ok sends and polls), and every
    key a send was issued to: the targets of the final reads. It learns from
    client ops only, and not from the final reads' polls, which read toward
    the targets. Shared, mutable state — like Jepsen's atom — written only
    by the interpreter thread."""

    def __init__(self) -> None:
        self.highest: dict[int, int] = {}
        self.sent_to: set[int] = set()

    def observe(self, event: OpDict) -> None:
        if event.get("process") == NEMESIS or event.get("final"):
            return
        if event.get("type") == "invoke":
            self.sent_to.update(sent_keys(event.get("value") or []))
            return
        if event.get("type") != "ok":
            return
        for key, offset in _offsets(event):
            if offset > self.highest.get(key, -1):
                self.highest[key] = offset


class TrackOffsets(Generator):
    """Feeds every event of ``gen`` to the tracker. Around a whole test's
    generator it gets the completions of main-phase ops that come after the
    time limit, which a generator of the main phase does not get once its
    phase has ended."""

    __slots__ = ("gen", "tracker")

    def __init__(self, gen: Generator | None, tracker: OffsetTracker) -> None:
        self.gen, self.tracker = gen, tracker

    def op(self, test: Any, ctx: Context) -> OpResult:
        r = self.gen.op(test, ctx) if self.gen is not None else None
        if r is None or r is PENDING:
            return r
        o, nxt = r  # type: ignore[misc]
        return o, TrackOffsets(nxt, self.tracker)

    def update(self, test: Any, ctx: Context, event: OpDict) -> Generator | None:
        self.tracker.observe(event)
        if self.gen is None:
            return self
        return TrackOffsets(self.gen.update(test, ctx, event), self.tracker)


def track_offsets(gen: GenLike, tracker: OffsetTracker) -> Generator:
    return TrackOffsets(lift(gen), tracker)


class CatchUp(Generator):
    """One thread's final reads (see the module docstring). ``seen`` is the
    highest offset this process has polled per key; ``None`` means an assign
    from the beginning is due. ``ends`` holds, per key, the last ``(end,
    high watermark)`` its consumer reported and since when (ns)."""

    __slots__ = ("ends", "keys", "seen", "tracker")

    def __init__(
        self,
        keys: list[int],
        tracker: OffsetTracker,
        seen: dict[int, int] | None = None,
        ends: dict[int, tuple[tuple[int, int], int]] | None = None,
    ) -> None:
        self.keys, self.tracker, self.seen = keys, tracker, seen
        self.ends = ends or {}

    def caught_up(self, now: int) -> bool:
        """Whether every key is read up to its target: polled at or past it;
        or read to an end past it (what is left below it was aborted); or
        read to the end of a log whose high watermark, at or below the
        target, has not moved for ``END_STABLE_S`` (the target is gone).
        An end below a higher watermark is an open transaction: wait."""
        seen = self.seen or {}
        for key, target in self.tracker.highest.items():
            if seen.get(key, -1) >= target:
                continue
            if key not in self.ends:
                return False
            (end, high), since = self.ends[key]
            if end > target:
                continue
            gone = high <= target and end >= high and now - since >= END_STABLE_S * 1e9
            if not gone:
                return False
        return True

    def op(self, test: Any, ctx: Context) -> OpResult:
        process = ctx.some_free_process()
        if self.seen is not None and self.caught_up(ctx.time):
            return None
        if process is None:
            return PENDING
        base = {"type": "invoke", "process": process, "time": ctx.time}
        if self.seen is None:
            keys = sorted({*self.keys, *self.tracker.sent_to})
            o = {**base, "f": "assign", "value": keys, "seek_to_beginning": True}
            return o, CatchUp(self.keys, self.tracker, {})
        o = {**base, "f": "poll", "value": [["poll"]], "poll_ms": FINAL_POLL_MS, "final": True}
        return o, self

    def update(self, test: Any, ctx: Context, event: OpDict) -> Generator | None:
        kind = event.get("type")
        if kind == "invoke":
            return self
        if (
            kind == "info"
            or event.get("end_process")
            or (event.get("f") == "assign" and kind == "fail")
        ):
            return CatchUp(self.keys, self.tracker, None)
        if kind == "ok" and event.get("f") == "poll":
            seen = dict(self.seen or {})
            for key, offset in _offsets(event):
                seen[key] = max(seen.get(key, -1), offset)
            reported = {int(k): (int(e), int(h)) for k, (e, h) in (event.get("ends") or {}).items()}
            now = event.get("time", ctx.time)
            ends = {}
            for key, state in reported.items():
                same = self.ends.get(key)
                ends[key] = same if same and same[0] == state else (state, now)
            return CatchUp(self.keys, self.tracker, seen, ends)
        return self


def final_polls(keys: list[int], tracker: OffsetTracker) -> Generator:
    """Every client thread reads every key (``keys`` and those sent to)
    until caught up (bound it with a time limit)."""
    return each_thread(CatchUp(keys, tracker))
