"""Offset resets a consumer logged (``offset_resets``: ``[{key, from, to}]``).

librdkafka moves a position back by itself when a fetch is out of range
(``auto.offset.reset``); jepka's client logs each such move on the op that
polled past it. A poll that goes back where its consumer logged a reset, on
that op or on one since the poll it is compared with, is reported, but
allowed: the client did not read out of order, it was moved.
"""

from __future__ import annotations

import numpy as np

from checkers.kind import Allowance, Case
from checkers.queue.key_log import KeyLog

# for kinds a consumer's moved position explains: a rebalance under subscribe, a reset
MOVED = Allowance(
    "every instance is on a key its process consumed via subscribe, where "
    "rebalances may move the position, or follows an offset reset its "
    "consumer logged (auto.offset.reset after an out-of-range fetch)"
)


def reset_of(kl: KeyLog, index: int) -> dict[str, int] | None:
    """The first reset of this key that op ``index``'s consumer logged, or None."""
    return kl.ctx.offset_resets.get(kl.key, {}).get(index)


def reset_since(kl: KeyLog, after: int, index: int, start: int | None) -> dict[str, int] | None:
    """The reset of this key that explains op ``index`` starting back at
    offset ``start`` after op ``after``'s poll: one its consumer logged on
    op ``index`` itself, else the earliest it logged on an op in between
    from which the position came back to ``start``. A failed transaction is
    rolled back to the first record of the key it polled, so its reset
    counts when that record is at or past the reset's target (the reset came
    first) and at or before ``start``; one that polled nothing of the key
    left the position where the reset put it. Such a reset names its op."""
    own = reset_of(kl, index)
    if own is not None:
        return own
    logged = kl.ctx.offset_resets.get(kl.key, {})
    between = np.array(sorted(i for i in logged if after < i < index), np.int64)
    if len(between) == 0:
        return None
    ops = kl.ctx.ops
    process = ops.process[ops.rows(np.r_[between, index])]
    for i in between[process[:-1] == process[-1]].tolist():
        reset = logged[i]
        polled = np.flatnonzero((kl.index == i) & kl.is_poll)
        first = kl.offset_at(int(polled[0])) if len(polled) else None
        if start is None or reset["to"] <= (start if first is None else first) <= start:
            return {**reset, "op": i}
    return None


def explain_reset(c: Case) -> str:
    """The sentence naming the offset reset the instance's consumer logged, if any."""
    r = c.get("reset")
    if not r:
        return ""
    on = f" on op {r['op']}" if "op" in r else ""
    return (
        f" Its consumer logged an offset reset of key {c['key']} from {r['from']} to "
        f"{r['to']}{on} (auto.offset.reset after an out-of-range fetch)."
    )
