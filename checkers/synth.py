"""Synthetic Kafka histories: a simulated *correct* Kafka, plus one injected fault.

The simulation keeps each key (partition) as a log of committed records with
sparse offsets (transaction markers and aborted records use offsets too).
``processes`` concurrent workers invoke and complete ops in a random
interleaving; an op takes effect atomically at its completion, so every
history is linearizable and valid under Jepsen's Kafka checker:

* ``send``/``poll``/``txn`` ops of 1 to 3 micro-ops (sends to random keys, with
  repeats inside an op; polls read the consumer's assigned keys from its
  position, read_committed, never the op's own sends);
* outcomes ``ok``; ``fail`` (nothing written — aborted records are
  invisible — and the consumer rewinds to where the op started); ``info``
  (committed or not, at random; the worker continues as a new process);
* ``assign``/``subscribe`` (with ``rebalance_log``): new keys start at the
  group's committed position, so every record before it was read by some OK
  op; ``crash`` ends the process;
* a final drain: one worker assigns every key and polls until all committed
  records were read, so nothing acknowledged is left unseen.

Faults (:data:`FAULTS`, in :mod:`history.faults`) splice a short
scenario on fresh keys (beyond the ``keys`` range) and fresh processes into
the history at random positions, so the history shows exactly that anomaly
(plus the echoes it implies, listed in ``history.faults.ECHOES``) and
nothing else.

Signatures::

    iter_ops(seed, n_ops, *, processes=10, keys=64, txn=True, drain=True) -> Iterator[Op]
    generate(seed, n_ops, *, fault=None, **options) -> list[Op]
    inject(ops, fault, seed) -> list[Op]      # re-indexed copy with the scenario spliced in
    write_history(path, seed, n_ops, fmt=None, **options) -> int   # streams; returns op count

``n_ops`` counts invocations in the main phase (each op is two lines: an
invocation and its completion); the drain adds a few more. Same arguments,
same history.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from typing import Any

from history.faults import FAULTS, inject
from history.formats import format_from_extension, read_flat
from history.op import Op
from history.parquet import write_parquet
from history.writers import write_ops

__all__ = ["FAULTS", "Simulation", "generate", "inject", "iter_ops", "write_history"]

OK_P, FAIL_P = 0.90, 0.04  # the rest of the client ops end info
ASSIGN_P, SUBSCRIBE_P, CRASH_P = 0.02, 0.01, 0.005
MAX_READ = 4  # records per key per poll
DRAIN_READ = 64


class _Key:
    """One partition: committed records, the next free offset, and the group's
    committed position (every record before it was read by an OK op)."""

    __slots__ = ("committed", "group_pos", "next_offset", "next_value")

    def __init__(self) -> None:
        self.committed: list[list[int]] = []  # [offset, value]
        self.next_offset = 0
        self.next_value = 1
        self.group_pos = 0


class _Worker:
    __slots__ = ("assigned", "op", "process")

    def __init__(self, process: int) -> None:
        self.process = process
        self.assigned: dict[int, int] = {}  # key -> position in its committed list
        self.op: Op | None = None  # the outstanding invocation


class Simulation:
    """A correct Kafka and its clients; :meth:`run` yields the history.
    (``int(random() * n)`` stands in for ``randrange(n)``: several times faster.)"""

    def __init__(self, seed: int, processes: int = 10, keys: int = 64, txn: bool = True):
        self.rng = random.Random(seed)
        self.txn = txn
        self.keys = [_Key() for _ in range(keys)]
        self.workers = [_Worker(p) for p in range(processes)]
        self.n_processes = processes
        self.time = 0
        self.index = 0

    def _op(self, op_type: str, process: int, f: str, value: Any, **extra: Any) -> Op:
        self.time += 1_000 + int(self.rng.random() * 199_000)
        op = Op(self.index, self.time, op_type, process, f, value, extra)
        self.index += 1
        return op

    def run(self, n_ops: int, drain: bool = True) -> Iterator[Op]:
        rng, workers = self.rng, self.workers
        invoked = 0
        while invoked < n_ops or any(w.op for w in workers):
            w = workers[int(rng.random() * len(workers))]
            if w.op is None:
                if invoked < n_ops:
                    w.op = self._invoke(w)
                    invoked += 1
                    yield w.op
            else:
                yield self._complete(w)
        if drain:
            yield from self._drain(workers[0])

    # invocations -------------------------------------------------------

    def _invoke(self, w: _Worker) -> Op:
        rng = self.rng
        r = rng.random()
        if r < CRASH_P:
            return self._op("invoke", w.process, "crash", None)
        if r < CRASH_P + ASSIGN_P + SUBSCRIBE_P or (not w.assigned and r < 0.2):
            f = "subscribe" if r < CRASH_P + SUBSCRIBE_P else "assign"
            n = rng.randint(1, min(len(self.keys), max(1, 2 * len(self.keys) // self.n_processes)))
            return self._op("invoke", w.process, f, sorted(rng.sample(range(len(self.keys)), n)))
        mops: list[list[Any]] = []
        sent: list[int] = []
        for _ in range(1 + int(rng.random() * 3) if self.txn else 1):
            if rng.random() < 0.5:
                k = (
                    rng.choice(sent)
                    if sent and rng.random() < 0.3
                    else int(rng.random() * len(self.keys))
                )
                key = self.keys[k]
                mops.append(["send", k, key.next_value])
                key.next_value += 1
                sent.append(k)
            else:
                mops.append(["poll"])
        kinds = {m[0] for m in mops}
        f = "txn" if len(kinds) > 1 else mops[0][0]
        return self._op("invoke", w.process, f, mops)

    # completions -------------------------------------------------------

    def _complete(self, w: _Worker) -> Op:
        inv, w.op = w.op, None
        assert inv is not None
        rng = self.rng
        if inv.f == "crash":
            return self._renew(w, self._op("info", inv.process, "crash", None))
        if inv.f in ("assign", "subscribe"):
            return self._assign(w, inv)
        r = rng.random()
        outcome = "ok" if r < OK_P else "fail" if r < OK_P + FAIL_P else "info"
        committed = outcome == "ok" or (outcome == "info" and rng.random() < 0.5)
        start = dict(w.assigned)
        value = []
        for mop in inv.value:
            if mop[0] == "poll":
                value.append(["poll", self._read(w, MAX_READ)])
        sends = [m for m in inv.value if m[0] == "send"]
        acks = self._write(sends, committed)
        reads = iter(value)
        done = []
        for mop in inv.value:
            if mop[0] == "poll":
                done.append(next(reads) if outcome != "info" else ["poll"])
            elif outcome == "ok":
                done.append(["send", mop[1], acks.pop(0)])
            else:
                done.append(list(mop))
        op = self._op(outcome, inv.process, inv.f, done)
        if outcome == "ok":
            for mop in done:
                if mop[0] == "poll":
                    for k in mop[1]:
                        key = self.keys[k]
                        key.group_pos = max(key.group_pos, w.assigned[k])
        elif outcome == "fail":
            w.assigned = start  # the client rewinds its consumer
        else:
            self._renew(w, op)
        return op

    def _read(self, w: _Worker, limit: int) -> dict[int, list[list[int]]]:
        out: dict[int, list[list[int]]] = {}
        for k, pos in w.assigned.items():
            committed = self.keys[k].committed
            n = min(len(committed) - pos, 1 + int(self.rng.random() * limit))
            if n > 0:
                out[k] = committed[pos : pos + n]  # records are never mutated
                w.assigned[k] = pos + n
        return out

    def _write(self, sends: list[list[Any]], committed: bool) -> list[list[int]]:
        """Appends the sends (visible only if committed); a transaction also
        leaves one marker per key it touched."""
        acks = []
        for _, k, v in sends:
            key = self.keys[k]
            record = [key.next_offset, v]
            key.next_offset += 1
            if committed:
                key.committed.append(record)
            acks.append(list(record))
        if self.txn and sends:
            for k in {k for _, k, _ in sends}:
                self.keys[k].next_offset += 1
        elif not committed:  # without transactions nothing was appended
            for _, k, _ in sends:
                self.keys[k].next_offset -= 1
        return acks

    def _assign(self, w: _Worker, inv: Op) -> Op:
        old = set(w.assigned)
        w.assigned = {k: w.assigned.get(k, self.keys[k].group_pos) for k in inv.value}
        if inv.f == "assign":
            return self._op("ok", inv.process, "assign", list(inv.value))
        log = [
            {"type": "revoked", "keys": sorted(old)},
            {"type": "assigned", "keys": list(inv.value)},
        ]
        return self._op("ok", inv.process, "subscribe", list(inv.value), rebalance_log=log)

    def _renew(self, w: _Worker, op: Op) -> Op:
        """After info or a crash the worker is a new client: new process id,
        nothing assigned."""
        w.process += self.n_processes
        w.assigned = {}
        return op

    def _drain(self, w: _Worker) -> Iterator[Op]:
        """Assigns every key at the group position and polls until caught up."""
        keys = list(range(len(self.keys)))
        yield self._op("invoke", w.process, "assign", keys)
        w.assigned = {k: self.keys[k].group_pos for k in keys}
        yield self._op("ok", w.process, "assign", keys)
        while any(w.assigned[k] < len(self.keys[k].committed) for k in keys):
            yield self._op("invoke", w.process, "poll", [["poll"]])
            records = self._read(w, DRAIN_READ)
            for k in records:
                self.keys[k].group_pos = max(self.keys[k].group_pos, w.assigned[k])
            yield self._op("ok", w.process, "poll", [["poll", records]])


def iter_ops(
    seed: int,
    n_ops: int,
    *,
    processes: int = 10,
    keys: int = 64,
    txn: bool = True,
    drain: bool = True,
) -> Iterator[Op]:
    """Streams a valid history of ``n_ops`` ops (plus the drain)."""
    return Simulation(seed, processes, keys, txn).run(n_ops, drain)


def generate(seed: int, n_ops: int, *, fault: str | None = None, **options: Any) -> list[Op]:
    """A valid history, or with one injected ``fault`` (see :data:`FAULTS`)."""
    ops = list(iter_ops(seed, n_ops, **options))
    return inject(ops, fault, seed) if fault else ops


def write_history(path: str, seed: int, n_ops: int, fmt: str | None = None, **options: Any) -> int:
    """Streams a valid history straight to ``path`` (``jsonl``, ``parquet`` or
    ``jepsen-edn``, from the extension unless ``fmt`` says); returns the number
    of lines. Parquet goes through a temporary JSONL file, so the flattening
    runs in one process per core while generation stays sequential."""
    fmt = fmt or format_from_extension(path) or "jsonl"
    if fmt != "parquet":
        return write_ops(iter_ops(seed, n_ops, **options), path, fmt)
    staging = f"{path}.jsonl.tmp"
    try:
        n = write_ops(iter_ops(seed, n_ops, **options), staging, "jsonl")
        write_parquet(read_flat(staging, "jsonl"), path)
    finally:
        if os.path.exists(staging):
            os.remove(staging)
    return n
