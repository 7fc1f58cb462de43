"""Hanging transactions: a partition's last stable offset held below its high
watermark, through the final reads, for longer than any transaction may stay
open.

A correct transaction coordinator aborts every transaction it knows once it
has been open for the producer's ``transaction.timeout.ms`` (it looks every
``transaction.abort.timed.out.transaction.cleanup.interval.ms``, 10 s by
default, then writes the markers). A transaction the coordinator never knew
of (a write that reached the partition after its transaction ended, KAFKA-14402)
is ended by nobody: the partition's read_committed end stays at its first
offset for good, and every record after it stays unread. Kafka's
``kafka-transactions.sh find-hanging`` (KIP-664) looks for the same thing
from the broker's side.

The final reads report, per key, the end their consumer reached (the last
stable offset, read_committed) and the high watermark; an end below the high
watermark is an open transaction.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from checkers.kind import Case, Kind, PerKey
from checkers.queue.context import TYPES, Context
from checkers.queue.key_log import KeyLog

#: the coordinator's sweep for timed-out transactions (Kafka's default
#: cleanup interval, 10 s) and the abort markers it then writes
COORDINATOR_SLACK_NS = 15_000_000_000


def _op_ref(ctx: Context, index: int) -> dict[str, Any]:
    at = int(ctx.ops.rows(np.array([index]))[0])
    return {
        "index": index,
        "process": ctx.processes[ctx.ops.process[at]],
        "time": int(ctx.ops.time[at]),
        "type": TYPES[ctx.ops.type[at]],
        "f": ctx.ops.fs[ctx.ops.f[at]],
    }


def hanging_transaction(kl: KeyLog) -> Iterator[Case]:
    """The longest stretch of the key's final reads whose reported end stayed
    at one offset below the high watermark, if it lasted longer than the
    producers' transaction timeout and the coordinator's slack: one instance
    per key. A report of another end, or of an end at the high watermark,
    ends a stretch."""
    ends = kl.ctx.final_ends.get(kl.key)
    limit = kl.ctx.txn_timeout_ns
    if ends is None or limit is None:
        return
    best: tuple[int, int, int] | None = None  # (length, first row, last row)
    first = None
    for i, (_, end, high, _) in enumerate(ends):
        if high <= end:
            first = None
            continue
        if first is None or ends[first, 1] != end:
            first = i
        length = int(ends[i, 0] - ends[first, 0])
        if best is None or length > best[0]:
            best = (length, first, i)
    if best is None or best[0] <= limit + COORDINATOR_SLACK_NS:
        return
    length, a, b = best
    yield {
        "key": kl.key,
        "offset": int(ends[b, 1]),
        "high_watermark": int(ends[b, 2]),
        "open_s": round(length / 1e9, 1),
        "txn_timeout_s": round(limit / 1e9, 1),
        "first": _op_ref(kl.ctx, int(ends[a, 3])),
        "op": _op_ref(kl.ctx, int(ends[b, 3])),
    }


def _explain(c: Case) -> str:
    return (
        f"Key {c['key']}'s read_committed end stayed at offset {c['offset']}, below its "
        f"high watermark {c['high_watermark']}, for {c['open_s']} s of final reads (op "
        f"{c['first']['index']} to op {c['op']['index']}), though a transaction times out "
        f"after {c['txn_timeout_s']} s: the transaction open at offset {c['offset']} is one "
        f"no coordinator ends."
    )


HANGING_TRANSACTION = Kind(
    "hanging-transaction",
    PerKey(hanging_transaction),
    _explain,
    "A transaction stayed open on a partition through the final reads, long after its "
    "producers' transaction timeout, so read_committed consumers could never read past "
    "its first record. A coordinator aborts every transaction it knows once it times "
    "out; one that stays open is a write the coordinator never knew of, typically one "
    "that reached the partition after its transaction had ended (KAFKA-14402).",
)
