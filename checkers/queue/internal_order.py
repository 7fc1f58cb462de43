"""Order inside one op: consecutive polls or sends of a key within a single
transaction (or poll/send op) must sit next to each other in the log."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from checkers.kind import WRITES_NOT_ISOLATED, Allowance, Case, Kind, PerKey
from checkers.queue.key_log import FAIL, NONE, KeyLog
from checkers.queue.resets import MOVED, explain_reset, reset_of
from checkers.queue.skipped import explain_skipped, skipped
from checkers.wording import at_offset, op_name


def _deltas(kl: KeyLog, poll: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Consecutive same-key micro-ops of one op: rows (a, b) and Δ = idx(b) - idx(a)."""
    if poll:
        # A rebalance during the op invalidates assumptions about its positions.
        rows = kl.is_poll & ~np.isin(kl.at, kl.ctx.rebalanced.get(kl.key, ()))
    else:
        rows = kl.is_send & (kl.type != FAIL)
    sel = np.flatnonzero(rows)
    a, b = sel[:-1], sel[1:]
    keep = (kl.index[a] == kl.index[b]) & (kl.idx[a] != NONE) & (kl.idx[b] != NONE)
    a, b = a[keep], b[keep]
    return a, b, kl.idx[b] - kl.idx[a]


def _case(kl: KeyLog, a: int, b: int, delta: int) -> Case:
    return {
        "key": kl.key,
        "delta": delta,
        "prev_value": int(kl.value[a]),
        "prev_offset": kl.offset_at(a),
        "prev_idx": int(kl.idx[a]),
        "value": int(kl.value[b]),
        "offset": kl.offset_at(b),
        "idx": int(kl.idx[b]),
        "prev_mop": int(kl.mop_index[a]),
        "mop_index": int(kl.mop_index[b]),
        "pos": int(kl.pos[b]),
        "op": kl.op_ref(b),
    }


def _skips(kl: KeyLog, poll: bool) -> Iterator[Case]:
    a, b, d = _deltas(kl, poll)
    for x, y, delta in zip(a[d > 1], b[d > 1], d[d > 1], strict=True):
        yield {
            **_case(kl, int(x), int(y), int(delta)),
            **skipped(kl, int(kl.idx[x]), int(kl.idx[y])),
        }


def _nonmonotonic(kl: KeyLog, poll: bool) -> Iterator[Case]:
    a, b, d = _deltas(kl, poll)
    for x, y, delta in zip(a[d < 1], b[d < 1], d[d < 1], strict=True):
        yield _case(kl, int(x), int(y), int(delta))


def int_poll_skip(kl: KeyLog) -> Iterator[Case]:
    """Inside one op, two consecutive polled records of a key jump over records
    known to exist between them. Keys the op saw rebalanced are exempt."""
    return _skips(kl, poll=True)


def int_nonmonotonic_poll(kl: KeyLog) -> Iterator[Case]:
    """Inside one op, a key's polled records go backwards or repeat (Δ < 1).
    Allowed where the op's consumer logged an offset reset of the key."""
    for case in _nonmonotonic(kl, poll=True):
        reset = reset_of(kl, case["op"]["index"])
        yield {**case, "reset": reset, "allowed": reset is not None}


def int_send_skip(kl: KeyLog) -> Iterator[Case]:
    """Two consecutive sends to a key in one op are not adjacent in the log:
    another producer's record landed between them. Kafka transactions do not
    isolate writes, so this is reported but allowed."""
    return _skips(kl, poll=False)


def int_nonmonotonic_send(kl: KeyLog) -> Iterator[Case]:
    """Two sends to a key in one op landed in the opposite order (Δ < 1)."""
    return _nonmonotonic(kl, poll=False)


def _explain(c: Case, verb: str) -> str:
    head = (
        f"{op_name(c['op'])} {verb} {c['prev_value']} ({at_offset(c['prev_offset'])}) then "
        f"{c['value']} ({at_offset(c['offset'])}) on key {c['key']}"
    )
    if c["delta"] > 1:
        return f"{head}, {explain_skipped(c, ' in between')}."
    return f"{head}, going backwards in the log.{explain_reset(c)}"


def _explain_polls(c: Case) -> str:
    return _explain(c, "polled")


def _explain_sends(c: Case) -> str:
    return _explain(c, "sent")


INT_POLL_SKIP = Kind(
    "int-poll-skip",
    PerKey(int_poll_skip),
    _explain_polls,
    "Within one poll, consecutive messages of a partition skip over messages that exist "
    "in the log between them.",
)
INT_NONMONOTONIC_POLL = Kind(
    "int-nonmonotonic-poll",
    PerKey(int_nonmonotonic_poll),
    _explain_polls,
    "Within one poll, messages of a partition arrive out of log order or repeated.",
    MOVED,
)
INT_SEND_SKIP = Kind(
    "int-send-skip",
    PerKey(int_send_skip),
    _explain_sends,
    "Two sends inside one transaction did not land next to each other: another "
    "producer's message is between them. Kafka does not isolate writes, so this is "
    "normally allowed.",
    Allowance(WRITES_NOT_ISOLATED, always=True),
)
INT_NONMONOTONIC_SEND = Kind(
    "int-nonmonotonic-send",
    PerKey(int_nonmonotonic_send),
    _explain_sends,
    "Two sends inside one transaction landed in the opposite order in the partition log.",
)
