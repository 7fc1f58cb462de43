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
watermark is an open transaction. Such an end is judged only where the final
reads last longer than the timeout and the slack below.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from checkers.kind import Case, Kind, PerKey
from checkers.queue.key_log import KeyLog

#: the coordinator's sweep for timed-out transactions (Kafka's default
#: ``transaction.abort.timed.out.transaction.cleanup.interval.ms``, 10 s) and
#: the abort markers it then writes; a cluster set to sweep less often can
#: hold a transaction open longer than this allows
COORDINATOR_SLACK_NS = 15_000_000_000
#: consumers that must each have seen the end held: one whose fetches stopped
#: keeps reporting the end it last reached
WITNESSES = 2


def _held(reports: np.ndarray, limit: int) -> dict[int, tuple[int, int, int]]:
    """One consumer's reports, by time: per end offset it saw held below the
    high watermark for longer than ``limit``, the longest such stretch as
    (length, first row, last row). A report of another end, or of an end at
    the high watermark, ends a stretch."""
    out: dict[int, tuple[int, int, int]] = {}
    first: int | None = None
    for i, (_, end, high, _, _) in enumerate(reports):
        if high <= end:
            first = None
            continue
        if first is None or reports[first, 1] != end:
            first = i
        length = int(reports[i, 0] - reports[first, 0])
        if length > limit and length > out.get(int(end), (0, 0, 0))[0]:
            out[int(end)] = (length, first, i)
    return out


def _moved_past(ends: np.ndarray, end: int, since: int) -> bool:
    """Whether a final read reported an end past ``end`` after ``since``:
    the last stable offset moved on, whatever other consumers still report."""
    return bool(np.any((ends[:, 0] > since) & (ends[:, 1] > end)))


def hanging_transaction(kl: KeyLog) -> Iterator[Case]:
    """The end the key's final reads saw held below the high watermark, at
    the same offset, for longer than the producers' transaction timeout and
    the coordinator's slack, by at least :data:`WITNESSES` consumers, and
    that no final read saw passed once they began: one instance per key,
    for the offset most of them saw held."""
    ends = kl.ctx.final_ends.get(kl.key)
    limit = kl.ctx.txn_timeout_ns
    if ends is None or limit is None:
        return
    # end offset → each witness's longest stretch: (length, first row, last row)
    held: dict[int, list[tuple[int, int, int]]] = {}
    for process in np.unique(ends[:, 4]):
        mine = np.flatnonzero(ends[:, 4] == process)
        for end, (length, a, b) in _held(ends[mine], limit + COORDINATOR_SLACK_NS).items():
            held.setdefault(end, []).append((length, int(mine[a]), int(mine[b])))
    # (witnesses, longest stretch, end offset, the witnesses' first row)
    seen: list[tuple[int, int, int, int]] = []
    for end, w in held.items():
        first = min(a for _, a, _ in w)
        if len(w) >= WITNESSES and not _moved_past(ends, end, ends[first, 0]):
            seen.append((len(w), max(length for length, _, _ in w), end, first))
    if not seen:
        return
    _, longest, end, first = max(seen)
    witnesses = held[end]
    last = max(b for _, _, b in witnesses)
    yield {
        "key": kl.key,
        "offset": end,
        "high_watermark": int(ends[last, 2]),
        "open_s": round(longest / 1e9, 1),
        "consumers": len(witnesses),
        "txn_timeout_s": round(limit / 1e9, 1),
        "first": kl.ctx.op_ref(int(ends[first, 3])),
        "op": kl.ctx.op_ref(int(ends[last, 3])),
    }


def _explain(c: Case) -> str:
    return (
        f"Key {c['key']}'s read_committed end stayed at offset {c['offset']}, below its "
        f"high watermark {c['high_watermark']}, through the final reads of {c['consumers']} "
        f"consumers (up to {c['open_s']} s, op {c['first']['index']} to op "
        f"{c['op']['index']}), though a transaction times out after {c['txn_timeout_s']} s: "
        f"the transaction open at offset {c['offset']} is one no coordinator ends."
    )


HANGING_TRANSACTION = Kind(
    "hanging-transaction",
    PerKey(hanging_transaction),
    _explain,
    "A transaction stayed open on a partition through the final reads, well past its "
    "producers' transaction timeout, so read_committed consumers could not read past "
    "its first record. A coordinator aborts every transaction it knows once it times "
    "out; one that stays open is a write the coordinator never knew of, typically one "
    "that reached the partition after its transaction had ended (KAFKA-14402).",
)
