"""Offset resets a consumer logged (``offset_resets``: ``[{key, from, to}]``).

librdkafka moves a position back by itself when a fetch is out of range
(``auto.offset.reset``); jepka's client logs each such move on the op that
polled past it. A poll that goes back where its consumer logged a reset is
reported, but allowed: the client did not read out of order, it was moved.
"""

from __future__ import annotations

from checkers.queue.key_log import KeyLog


def reset_of(kl: KeyLog, index: int) -> dict[str, int] | None:
    """The first reset of this key that op ``index``'s consumer logged, or None."""
    return kl.ctx.offset_resets.get(kl.key, {}).get(index)
