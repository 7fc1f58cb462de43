"""Order across one process's ops: where each poll starts relative to where the
process's previous poll of that key stopped, and where its sends land.

A process consumes each key from a position that only an assign/subscribe, a
rebalance of that key, or a rollback may move. Per process and key, the scan
resets at each of those; a failed (or crashed) transaction's polls must be
rewound by the next op, which must start at or before the first record the
failed op polled. A poll that goes back after its consumer logged an offset
reset of the key (``checkers.queue.resets``), on it or on an op since the one
it is compared with, is reported but allowed; a skip only after one logged
on the op itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from checkers.kind import Case, Kind, PerKey
from checkers.queue.context import PROCESS_SHIFT
from checkers.queue.key_log import FAIL, NONE, OK, KeyLog, group_bounds
from checkers.queue.resets import MOVED, explain_reset, reset_of, reset_since
from checkers.queue.skipped import explain_skipped, skipped
from checkers.wording import at_offset, op_name


@dataclass
class Spans:
    """Per op: the first and last row of this key it touched (sorted by
    process, then index)."""

    first: np.ndarray
    last: np.ndarray

    @classmethod
    def of(cls, kl: KeyLog, rows: np.ndarray) -> Spans:
        sel = np.flatnonzero(rows)
        starts, ends = group_bounds(kl.index[sel])
        first, last = sel[starts], sel[ends - 1]
        order = np.argsort(kl.at[first], kind="stable")
        return cls(first[order], last[order])


def _ref(kl: KeyLog, span_first: int, span_last: int) -> dict[str, Any]:
    return {
        "prev_op": kl.op_ref(span_last),
        "prev_value": int(kl.value[span_last]),
        "prev_offset": kl.offset_at(span_last),
        "prev_first_offset": kl.offset_at(span_first),
    }


@dataclass
class PollDeltas:
    """Per OK poll of a key: Δ from the process's reference position, with
    ``mode`` "read" (after an OK poll: both directions checked) or "rewind"
    (after only failed polls: the op must not start past the failed op's first
    record)."""

    kl: KeyLog

    @cached_property
    def judged(self) -> dict[str, np.ndarray]:
        """Per judged poll: its first row ``r``, its reference span's first and
        last rows, ``ref_idx``, whether the reference was read (an OK poll)
        and the reset that opened its segment (-1: none)."""
        kl, ctx = self.kl, self.kl.ctx
        sp = Spans.of(kl, kl.is_poll)
        known = kl.idx[sp.first] != NONE
        first, last = sp.first[known], sp.last[known]
        at = kl.at[first]
        seg = ctx.resets.segment(at)
        kseg = np.searchsorted(ctx.rebalanced.get(kl.key, np.empty(0, np.int64)), at, "right")
        n = len(at)
        pos = np.arange(n)
        new = np.r_[
            True,
            (at[1:] // PROCESS_SHIFT != at[:-1] // PROCESS_SHIFT)
            | (seg[1:] != seg[:-1])
            | (kseg[1:] != kseg[:-1]),
        ][:n]
        start = np.maximum.accumulate(np.where(new, pos, 0))
        ok = kl.type[first] == OK
        last_ok = np.r_[-1, np.maximum.accumulate(np.where(ok, pos, -1))[:-1]][:n]
        read = last_ok >= start
        i = np.flatnonzero(ok & (read | ~new))
        read = read[i]
        j = np.where(read, last_ok[i], i - 1)
        ref_idx = np.where(read, kl.idx[last[j]], kl.idx[first[j]] - 1)
        return {
            "r": first[i],
            "ref_first": first[j],
            "ref_last": last[j],
            "ref_idx": ref_idx,
            "read": read,
            "seg": seg[i],
        }

    def cases(self, skips: bool) -> Iterator[Case]:
        kl, jd = self.kl, self.judged
        delta = kl.idx[jd["r"]] - jd["ref_idx"]
        for k in np.flatnonzero(delta > 1 if skips else (delta < 1) & jd["read"]):
            r, ref_idx, seg = int(jd["r"][k]), int(jd["ref_idx"][k]), int(jd["seg"][k])
            via = kl.ctx.resets.f[seg] if seg >= 0 else None
            # one logged on an op between explains only going back; on the op itself, either
            reset = (
                reset_of(kl, int(kl.index[r]))
                if skips
                else reset_since(
                    kl, int(kl.index[jd["ref_last"][k]]), int(kl.index[r]), kl.offset_at(r)
                )
            )
            case = {
                "key": kl.key,
                "delta": int(delta[k]),
                "mode": "read" if jd["read"][k] else "rewind",
                "via": via,
                **_ref(kl, int(jd["ref_first"][k]), int(jd["ref_last"][k])),
                "op": kl.op_ref(r),
                "value": int(kl.value[r]),
                "offset": kl.offset_at(r),
                "idx": int(kl.idx[r]),
                "reset": reset,
                "allowed": via == "subscribe" or reset is not None,
            }
            if skips:
                yield {**case, "ref_idx": ref_idx, **skipped(kl, ref_idx, int(kl.idx[r]))}
            else:
                yield case


def _deltas(kl: KeyLog) -> PollDeltas:
    return kl.shared("poll-deltas", PollDeltas)


def poll_skip(kl: KeyLog) -> Iterator[Case]:
    """A process's poll of a key starts more than one record past where its
    previous OK poll of that key stopped, with no assign, subscribe or rebalance
    of the key in between; or it starts past the first record of a failed
    transaction's poll that it should have rewound to. Records in between were
    skipped. Allowed for keys the process consumes via subscribe, and after
    a logged offset reset."""
    return _deltas(kl).cases(skips=True)


def nonmonotonic_poll(kl: KeyLog) -> Iterator[Case]:
    """A process's poll of a key starts at or before a record its previous OK
    poll already returned, with nothing in between that could move it back.
    Allowed for keys the process consumes via subscribe, and where the op's
    consumer logged an offset reset of the key that moved it back there
    (``checkers.queue.resets.reset_since``)."""
    return _deltas(kl).cases(skips=False)


def nonmonotonic_send(kl: KeyLog) -> Iterator[Case]:
    """One producer's later op sent to a key and the record landed at or before
    the record its previous sending op wrote to that key (Δ < 1). Only OK and
    info ops count; a send whose position is unknown is not judged."""
    sp = Spans.of(kl, kl.is_send & (kl.type != FAIL))
    a, b = sp.last[:-1], sp.first[1:]
    same = kl.process[sp.first[:-1]] == kl.process[b]
    known = (kl.idx[a] != NONE) & (kl.idx[b] != NONE)
    delta = kl.idx[b] - kl.idx[a]
    for x, y, d in zip(a[same & known], b[same & known], delta[same & known], strict=True):
        if d < 1:
            yield {
                "key": kl.key,
                "delta": int(d),
                "prev_op": kl.op_ref(int(x)),
                "prev_value": int(kl.value[x]),
                "prev_offset": kl.offset_at(int(x)),
                "op": kl.op_ref(int(y)),
                "value": int(kl.value[y]),
                "offset": kl.offset_at(int(y)),
            }


def _explain_poll(c: Case) -> str:
    via = " (consumed via subscribe)" if c.get("via") == "subscribe" else ""
    if c.get("mode") == "rewind":
        ref = (
            f"after {op_name(c['prev_op'])} failed having polled key {c['key']} from "
            f"offset {c['prev_first_offset']}, it should have rewound there"
        )
    else:
        ref = (
            f"its previous poll, {op_name(c['prev_op'])}, stopped at {c['prev_value']} "
            + at_offset(c["prev_offset"])
        )
    head = (
        f"On key {c['key']}{via}, {ref}; {op_name(c['op'])} then started at {c['value']} "
        + at_offset(c["offset"])
    )
    if c["delta"] > 1:
        return f"{head}, {explain_skipped(c)}.{explain_reset(c)}"
    return f"{head}, at or before a record it had already polled.{explain_reset(c)}"


def _explain_send(c: Case) -> str:
    return (
        f"{op_name(c['prev_op'])} sent {c['prev_value']} to key {c['key']} "
        f"{at_offset(c['prev_offset'])}; the same producer's later {op_name(c['op'])} sent "
        f"{c['value']}, which landed {at_offset(c['offset'])}, no later in the log."
    )


POLL_SKIP = Kind(
    "poll-skip",
    PerKey(poll_skip),
    _explain_poll,
    "A consumer's next poll jumped over messages that exist in the log, without any "
    "rebalance or re-assignment in between: messages were silently skipped.",
    MOVED,
)
NONMONOTONIC_POLL = Kind(
    "nonmonotonic-poll",
    PerKey(nonmonotonic_poll),
    _explain_poll,
    "A consumer's next poll went backwards (or repeated) in the log without a rebalance "
    "or re-assignment: it re-read messages it had already consumed.",
    MOVED,
)
NONMONOTONIC_SEND = Kind(
    "nonmonotonic-send",
    PerKey(nonmonotonic_send),
    _explain_send,
    "One producer's later send landed at or before its earlier send in the partition "
    "log: the producer's order was not preserved.",
)
