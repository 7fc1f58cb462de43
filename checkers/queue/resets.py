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


def reset_since(kl: KeyLog, after: int, index: int) -> dict[str, int] | None:
    """The first reset of this key that op ``index``'s consumer logged on one
    of its ops after op ``after``, up to ``index`` itself: a reset logged on
    a failed transaction between two polls moved the position the next poll
    starts from too."""
    logged = kl.ctx.offset_resets.get(kl.key, {})
    between = np.array(sorted(i for i in logged if after < i <= index), np.int64)
    if len(between) == 0:
        return None
    ops = kl.ctx.ops
    process = ops.process[ops.rows(np.r_[between, index])]
    mine = between[process[:-1] == process[-1]]
    return logged[int(mine[0])] if len(mine) else None


def explain_reset(c: Case) -> str:
    """The sentence naming the offset reset the instance's consumer logged, if any."""
    r = c.get("reset")
    if not r:
        return ""
    return (
        f" Its consumer logged an offset reset of key {c['key']} from {r['from']} to "
        f"{r['to']} (auto.offset.reset after an out-of-range fetch)."
    )
