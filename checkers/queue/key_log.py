"""One key's history as numpy arrays: its micro-ops, the version order over
its sparse offsets, and who wrote each value.

Every queue analysis but one (which ops must have committed) looks at one key
at a time, so the check hands each key's rows to :class:`KeyLog` in one
Spark grouped map and runs them all there, in numpy.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from checkers.queue.context import FAIL, INFO, OK, TYPES, Context, by_process, mop_code

__all__ = ["FAIL", "INFO", "OK", "TYPES", "KeyLog"]

MOPS = ("send", "poll")
SEND, POLL = 0, 1  # the ``mop`` column of a key's rows
T = TypeVar("T")
NONE = -1  # an unknown offset, or a micro-op with no place in the version order


def _ints(col: pa.ChunkedArray | pa.Array, null: int = NONE) -> np.ndarray:
    return pc.fill_null(col, null).to_numpy().astype(np.int64)


def group_starts(sorted_keys: np.ndarray) -> np.ndarray:
    """Where each run of equal values starts in a sorted array."""
    if len(sorted_keys) == 0:
        return np.empty(0, np.int64)
    return np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])


def distinct_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (a, b) pairs sorted (a stable sort), and where each distinct pair
    starts in that order: ``(order, new)``, ``new`` a mask over the order."""
    order = np.lexsort((b, a))
    sa, sb = a[order], b[order]
    new = np.ones(len(order), bool)
    new[1:] = (sa[1:] != sa[:-1]) | (sb[1:] != sb[:-1])
    return order, new


def find(sorted_values: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Positions of ``values`` in the sorted ``sorted_values``, -1 where absent."""
    if len(sorted_values) == 0:
        return np.full(len(values), -1, np.int64)
    at = np.minimum(np.searchsorted(sorted_values, values), len(sorted_values) - 1)
    return np.where(sorted_values[at] == values, at, -1)


def ranges(start: np.ndarray, count: np.ndarray) -> np.ndarray:
    """The ranges ``[start, start + count)`` one after another, as positions."""
    out = np.repeat(start - np.r_[0, np.cumsum(count)[:-1]], count)
    out += np.arange(len(out))
    return out


def group_bounds(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) of each run of equal values in a sorted array."""
    starts = group_starts(sorted_keys)
    return starts, np.r_[starts[1:], len(sorted_keys)].astype(np.int64)[: len(starts)]


class KeyLog:
    """The micro-ops of one key (sends, and polled records), one entry each.

    ``committed[i]``: the op of row ``i`` must have committed (it is OK, or it
    is info and ``seen_info`` holds it: an OK poll saw one of its sends).
    """

    def __init__(self, table: pa.Table, ctx: Context) -> None:
        self.ctx = ctx
        self._memo: dict[str, Any] = {}
        table = table.sort_by(
            [("index", "ascending"), ("mop_index", "ascending"), ("pos", "ascending")]
        )
        self.key = int(table.column("key")[0].as_py()) if table.num_rows else 0
        self.index = _ints(table.column("index"))
        op = ctx.ops.rows(self.index)
        self.time = ctx.ops.time[op]
        self.invoke_time = ctx.ops.invoke_time[op]
        self.type = ctx.ops.type[op]
        self.process = ctx.ops.process[op].astype(np.int64)
        self.f = ctx.ops.f[op]
        self.mop = _ints(table.column("mop"))
        self.mop_index = _ints(table.column("mop_index"))
        self.pos = _ints(table.column("pos"), 0)
        self.offset = _ints(table.column("offset"))
        self.has_offset = table.column("offset").is_valid().to_numpy(zero_copy_only=False)
        self.value = _ints(table.column("value"))
        self.is_send = self.mop == SEND
        self.is_poll = self.mop == POLL

    def shared(self, name: str, build: Callable[[KeyLog], T]) -> T:
        """A derivation several finders use, built once per key."""
        if name not in self._memo:
            self._memo[name] = build(self)
        return self._memo[name]

    @cached_property
    def at(self) -> np.ndarray:
        """Each row's op position among its process's ops (context.by_process)."""
        return by_process(self.process, self.index)

    def __len__(self) -> int:
        return len(self.index)

    @cached_property
    def ok_polls(self) -> np.ndarray:
        """The rows of records OK polls read."""
        return np.flatnonzero(self.is_poll & (self.type == OK))

    def ok_polls_of(self, values: np.ndarray) -> np.ndarray:
        """The rows of records OK polls read with one of ``values``."""
        return self.ok_polls[np.isin(self.value[self.ok_polls], values)]

    @cached_property
    def seen_here(self) -> np.ndarray:
        """Info ops an OK poll of this key saw a send of (Jepsen's
        must-have-committed?), sorted.

        A value sent by more than one op (an eos copy retried after an info
        copy re-sends what it copied) proves an info send only where it was
        read: at that send's offset, when the send knows it."""
        info = np.flatnonzero(self.is_send & (self.type == INFO))
        if len(info) == 0:
            return np.empty(0, np.int64)
        sends = np.flatnonzero(self.is_send)
        order, new = distinct_pairs(self.value[sends], self.index[sends])
        sent, senders = np.unique(self.value[sends][order][new], return_counts=True)
        one_sender = senders[np.searchsorted(sent, self.value[info])] == 1
        by_value = one_sender | ~self.has_offset[info]
        reads = self.ok_polls
        mine, theirs = pair_codes(
            (self.value[info], self.offset[info]), (self.value[reads], self.offset[reads])
        )
        seen = np.where(by_value, self.was_ok_read(self.value[info]), np.isin(mine, theirs))
        return np.unique(self.index[info[seen]])

    @cached_property
    def refused(self) -> np.ndarray:
        """Per row: a send its client saw refused, in an op that is info as a
        whole because others of its sends may have been written."""
        info = self.is_send & (self.type == INFO)
        return info & np.isin(mop_code(self.index, self.mop_index), self.ctx.refused)

    @cached_property
    def info_sent_here(self) -> np.ndarray:
        """Info ops that sent to this key, sorted."""
        return np.unique(self.index[self.is_send & (self.type == INFO)])

    @cached_property
    def committed(self) -> np.ndarray:
        """Per row: its op must have committed (OK, or info and an OK poll saw
        one of its sends, here or, per the context, on another key)."""
        seen = np.union1d(self.seen_here, self.ctx.seen_info)
        return (self.type == OK) | ((self.type == INFO) & np.isin(self.index, seen))

    # references ------------------------------------------------------------

    def op_ref(self, i: int) -> dict[str, Any]:
        """A compact reference to row ``i``'s op, as every anomaly instance carries it."""
        return self.ctx.op_ref(int(self.index[i]))

    def offset_at(self, i: int) -> int | None:
        return int(self.offset[i]) if self.has_offset[i] else None

    # the version order -------------------------------------------------------

    @cached_property
    def observed(self) -> np.ndarray:
        """The rows the version order is made of: every poll of any op type, plus
        sends of ops that must have committed, where the offset is known."""
        return self.has_offset & (self.is_poll | (self.is_send & self.committed))

    @cached_property
    def _versions(self) -> tuple[np.ndarray, np.ndarray]:
        """Distinct (offset, value) pairs of the observed rows, sorted."""
        offset, value = self.offset[self.observed], self.value[self.observed]
        order, new = distinct_pairs(offset, value)
        return offset[order][new], value[order][new]

    @property
    def v_offset(self) -> np.ndarray:
        return self._versions[0]

    @property
    def v_value(self) -> np.ndarray:
        return self._versions[1]

    @cached_property
    def offsets(self) -> np.ndarray:
        """The distinct offsets of the version order: dense index i is offsets[i]."""
        return np.unique(self.v_offset)

    @cached_property
    def v_idx(self) -> np.ndarray:
        return np.searchsorted(self.offsets, self.v_offset)

    @cached_property
    def values(self) -> np.ndarray:
        """The distinct values of the version order (sorted)."""
        return np.unique(self.v_value)

    @cached_property
    def _value_spans(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per distinct value: first and last dense index, and how many offsets."""
        order = np.lexsort((self.v_idx, self.v_value))
        vals, idx = self.v_value[order], self.v_idx[order]
        starts, ends = group_bounds(vals)
        return idx[starts], idx[ends - 1], ends - starts

    @property
    def value_first(self) -> np.ndarray:
        return self._value_spans[0]

    @property
    def value_last(self) -> np.ndarray:
        return self._value_spans[1]

    @property
    def value_count(self) -> np.ndarray:
        return self._value_spans[2]

    def value_offsets(self, value: int) -> list[int]:
        """The offsets ``value`` appears at, ascending."""
        return sorted(int(o) for o in self.v_offset[self.v_value == value])

    def value_pos(self, values: np.ndarray) -> np.ndarray:
        """Positions of ``values`` in :attr:`values`, or -1 where absent."""
        return find(self.values, values)

    @cached_property
    def by_index(self) -> np.ndarray:
        """Dense index → one value (the smallest, should an offset conflict)."""
        order = np.lexsort((self.v_value, self.v_idx))
        starts = group_starts(self.v_idx[order])
        return self.v_value[order][starts]

    @cached_property
    def idx(self) -> np.ndarray:
        """Each row's dense index: from its offset when the version order has
        it, else the first index its value appears at (sends with unknown
        offsets), else ``NONE``."""
        at = np.where(self.has_offset, find(self.offsets, self.offset), -1)
        vp = self.value_pos(self.value)
        by_value = self.value_first[np.maximum(vp, 0)] if len(self.values) else vp
        return np.where(at >= 0, at, np.where(vp >= 0, by_value, NONE))

    # reads and writers -----------------------------------------------------

    @cached_property
    def ok_read_values(self) -> np.ndarray:
        """Distinct values some OK op polled (sorted)."""
        return np.unique(self.value[self.ok_polls])

    def was_ok_read(self, values: np.ndarray) -> np.ndarray:
        return np.isin(values, self.ok_read_values)

    @cached_property
    def writers(self) -> tuple[np.ndarray, np.ndarray]:
        """(values, row): per distinct sent value, the send row of the op that
        wrote it (the earliest that must have committed, should values repeat)."""
        rows = np.flatnonzero(self.is_send)
        order = np.lexsort((self.index[rows], ~self.committed[rows], self.value[rows]))
        rows = rows[order]
        starts = group_starts(self.value[rows])
        return self.value[rows][starts], rows[starts]

    def writer_rows(self, values: np.ndarray) -> np.ndarray:
        """The writer row of each value, or -1 (no writer, or an uncommitted one)."""
        wv, wrow = self.writers
        at = find(wv, values)
        row = wrow[np.maximum(at, 0)] if len(wv) else at
        return np.where((at >= 0) & self.committed[row], row, -1)


def equi_join(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions (i, j) of every pair with ``left[i] == right[j]``, by i then j."""
    order = np.argsort(right, kind="stable")
    r = right[order]
    lo = np.searchsorted(r, left, side="left")
    hi = np.searchsorted(r, left, side="right")
    n = hi - lo
    i = np.repeat(np.arange(len(left)), n)
    j = order[ranges(lo, n)]
    return i, j


def pair_codes(
    left: tuple[np.ndarray, np.ndarray], right: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """One int code per (a, b) pair, equal across ``left`` and ``right`` exactly
    where the pairs are: to join on two columns with :func:`equi_join`."""
    order, new = distinct_pairs(np.r_[left[0], right[0]], np.r_[left[1], right[1]])
    codes = np.empty(len(order), np.int64)
    codes[order] = np.cumsum(new) - 1
    return codes[: len(left[0])], codes[len(left[0]) :]
