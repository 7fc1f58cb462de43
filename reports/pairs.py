"""Invocations paired with their completions: the unit every view draws.

The history layer reads any format into its flat table (one row per micro-op
element, ops already paired); this module folds that table once into column
arrays with one entry per client operation, so plots over a 1M-op history
stay vectorised. Op contents are rendered back to text only for the few
thousand ops a page embeds. Nemesis ops become fault intervals, which every
time plot draws as bands.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from history import FLAT_SCHEMA, read_flat
from history.op import NEMESIS

NS = 1e9

# A nemesis f that starts a fault, mapped to the f that ends it and the band's class.
FAULT_VERBS: dict[str, tuple[str, str]] = {
    "start-partition": ("stop-partition", "partition"),
    "partition": ("heal", "partition"),
    "kill": ("start", "kill"),
    "start-kill": ("stop-kill", "kill"),
    "pause": ("resume", "pause"),
    "start-pause": ("stop-pause", "pause"),
    "start-clock": ("stop-clock", "clock"),
    "bump-clock": ("reset-clock", "clock"),
}
# Faults that happen at one instant (no stop op): drawn as a thin band.
INSTANT_FAULTS: dict[str, str] = {"lose-unfsynced": "disk", "strobe-clock": "clock"}


@dataclass(slots=True)
class Flat:
    """The flat table's columns as numpy arrays, plus where each op starts."""

    heads: np.ndarray  # table row where each op starts
    op_of_row: np.ndarray  # op position of every table row
    mop: np.ndarray
    mop_index: np.ndarray  # -1 where null
    key: np.ndarray  # -1 where null (keys are small non-negative integers)
    has_key: np.ndarray
    offset: np.ndarray
    has_offset: np.ndarray
    value: np.ndarray
    has_value: np.ndarray
    has_pos: np.ndarray
    payload: list[str | None]  # per op
    keys: list[list[int] | None]  # per op

    def op_rows(self, pos: int) -> range:
        end = self.heads[pos + 1] if pos + 1 < len(self.heads) else len(self.op_of_row)
        return range(int(self.heads[pos]), int(end))

    def op_keys(self, pos: int) -> set[str]:
        rows = self.op_rows(pos)
        ks = self.key[rows.start : rows.stop][self.has_key[rows.start : rows.stop]]
        return {str(k) for k in ks.tolist()}

    def render(self, pos: int) -> Any:
        """The op's value as it was written in the history (micro-ops rebuilt)."""
        if self.payload[pos] is not None:
            return json.loads(self.payload[pos])  # type: ignore[arg-type]
        if self.keys[pos] is not None:
            return self.keys[pos]
        mops: dict[int, Any] = {}
        for r in self.op_rows(pos):
            i = int(self.mop_index[r])
            if i < 0:
                continue
            k = int(self.key[r]) if self.has_key[r] else None
            v = int(self.value[r]) if self.has_value[r] else None
            if self.mop[r] == "send":
                off = int(self.offset[r]) if self.has_offset[r] else None
                mops[i] = ["send", k, [off, v] if self.has_pos[r] else v]
            elif k is None and not self.has_pos[r]:
                mops[i] = ["poll"]  # an invocation's bare poll
            else:
                m = mops.setdefault(i, ["poll", {}])
                if k is not None:
                    recs = m[1].setdefault(str(k), [])
                    if v is not None:
                        recs.append([int(self.offset[r]), v])
        return [mops[i] for i in sorted(mops)] or None


@dataclass(slots=True)
class Pairs:
    """Column arrays, one entry per client operation, in history order."""

    invoke: np.ndarray  # history index of the invoke (-1 if only a completion was seen)
    complete: np.ndarray  # history index of the completion (-1 if never completed)
    t0: np.ndarray  # invoke time, seconds
    t1: np.ndarray  # completion time, seconds (NaN if never completed)
    process: np.ndarray  # str
    f: np.ndarray  # str
    type: np.ndarray  # ok | fail | info | pending
    error: list[str | None]
    shown: np.ndarray  # op position whose contents the row shows (completion, else invoke)
    flat: Flat

    def __len__(self) -> int:
        return len(self.f)

    def value(self, row: int) -> Any:
        return self.flat.render(int(self.shown[row]))

    def rows_of(self, indices: Iterable[int]) -> dict[int, int]:
        """History index (invoke or completion) → row, for those of ``indices`` found."""
        want = np.fromiter(indices, dtype=np.int64)
        idx = np.concatenate([self.invoke, self.complete])
        rows = np.concatenate([np.arange(len(self))] * 2)
        order = np.argsort(idx, kind="stable")
        idx, rows = idx[order], rows[order]
        at = np.minimum(np.searchsorted(idx, want), max(len(idx) - 1, 0))
        found = (idx[at] == want) & (want >= 0) if len(idx) else np.zeros(len(want), bool)
        return dict(zip(want[found].tolist(), rows[at[found]].tolist(), strict=True))


@dataclass(slots=True)
class Fault:
    """One nemesis interval: when a fault was in force and what it was."""

    kind: str
    f: str
    start: float
    end: float | None  # None: never healed within the history
    value: Any = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "f": self.f,
            "start": self.start,
            "end": self.end,
            "value": short(self.value, 120),
        }


def load_pairs(path: Path | None) -> tuple[Pairs, list[Fault], float]:
    """Reads a history file (any format the history layer reads; ``None`` for
    none) into client pairs, nemesis faults and the last time seen, in seconds."""
    table = read_flat(path) if path is not None else FLAT_SCHEMA.empty_table()
    return fold(table)


def _np(table: pa.Table, name: str, fill: Any) -> tuple[np.ndarray, np.ndarray]:
    col = table[name]
    valid = ~np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    return np.asarray(col.fill_null(fill).to_numpy(zero_copy_only=False)), valid


def fold(table: pa.Table) -> tuple[Pairs, list[Fault], float]:
    """The flat table → (pairs, faults, end time in seconds)."""
    row = table["row"].to_numpy()
    heads = np.flatnonzero(row == 0)
    op_of_row = np.cumsum(row == 0) - 1
    head = table.take(pa.array(heads))
    index = head["index"].to_numpy()
    time = head["time"].to_numpy() / NS
    types = np.asarray(head["type"].to_numpy(zero_copy_only=False), dtype=object)
    process = np.asarray(head["process"].to_numpy(zero_copy_only=False), dtype=object)
    fs = np.asarray(head["f"].to_numpy(zero_copy_only=False), dtype=object)
    pair_index, has_pair = _np(head, "pair_index", -1)
    errors = head["error"].to_pylist()
    key, has_key = _np(table, "key", -1)
    offset, has_offset = _np(table, "offset", -1)
    value, has_value = _np(table, "value", -1)
    mop_index, _ = _np(table, "mop_index", -1)
    flat = Flat(
        heads,
        op_of_row,
        np.asarray(table["mop"].fill_null("").to_numpy(zero_copy_only=False), dtype=object),
        mop_index,
        key,
        has_key,
        offset,
        has_offset,
        value,
        has_value,
        _np(table, "pos", -1)[1],
        head["payload"].to_pylist(),
        head["keys"].to_pylist(),
    )

    client = process != NEMESIS
    inv = np.flatnonzero(client & (types == "invoke"))
    done_pos = np.where(has_pair[inv], np.searchsorted(index, pair_index[inv]), -1)
    lone = np.flatnonzero(client & (types != "invoke") & ~has_pair)  # truncated history
    completed = done_pos >= 0
    safe = np.where(completed, done_pos, 0)
    pairs = Pairs(
        invoke=np.concatenate([index[inv], np.full(len(lone), -1)]).astype(np.int64),
        complete=np.concatenate([np.where(completed, index[safe], -1), index[lone]]),
        t0=np.concatenate([time[inv], time[lone]]),
        t1=np.concatenate([np.where(completed, time[safe], np.nan), time[lone]]),
        process=np.concatenate([process[inv], process[lone]]),
        f=np.concatenate([fs[inv], fs[lone]]),
        type=np.concatenate([np.where(completed, types[safe], "pending"), types[lone]]),
        error=[_error(errors[p]) if c else None for p, c in zip(safe, completed, strict=True)]
        + [_error(errors[p]) for p in lone],
        shown=np.concatenate([np.where(completed, done_pos, inv), lone]).astype(np.int64),
        flat=flat,
    )
    if len(lone):
        order = np.argsort(np.where(pairs.invoke >= 0, pairs.invoke, pairs.complete), kind="stable")
        _reorder(pairs, order)
    nem = np.flatnonzero(~client)
    nemesis = [(str(fs[p]), str(types[p]), float(time[p]), flat.render(int(p))) for p in nem]
    end = float(time.max()) if len(time) else 0.0
    return pairs, fault_intervals(nemesis), end


def _reorder(pairs: Pairs, order: np.ndarray) -> None:
    for name in ("invoke", "complete", "t0", "t1", "process", "f", "type", "shown"):
        setattr(pairs, name, getattr(pairs, name)[order])
    pairs.error = [pairs.error[i] for i in order.tolist()]


def _error(raw: str | None) -> str | None:
    if raw is None:
        return None
    try:
        return short(json.loads(raw), 80)
    except ValueError:
        return short(raw, 80)


def fault_intervals(nemesis: list[tuple[str, str, float, Any]]) -> list[Fault]:
    """Nemesis ops ``(f, type, time s, value)`` → intervals. Jepsen records each
    nemesis op as an invoke then an info; a fault counts from the completion of
    its start to the completion of its stop."""
    done = [op for op in nemesis if op[1] != "invoke"] or nemesis
    closers = {stop: start for start, (stop, _) in FAULT_VERBS.items()}
    open_: dict[str, Fault] = {}
    out: list[Fault] = []
    for f, _, t, value in done:
        if f in INSTANT_FAULTS:
            out.append(Fault(INSTANT_FAULTS[f], f, t, t, value))
        elif f in FAULT_VERBS or f.startswith("start-"):
            if f not in open_:
                kind = FAULT_VERBS[f][1] if f in FAULT_VERBS else "other"
                open_[f] = Fault(kind, f, t, None, value)
                out.append(open_[f])
        elif f in closers and closers[f] in open_:
            open_.pop(closers[f]).end = t
        elif f.startswith("stop-") and "start-" + f[5:] in open_:
            open_.pop("start-" + f[5:]).end = t
    return out


def short(v: Any, limit: int) -> str:
    """A compact one-line rendering of a value, cut at ``limit`` characters."""
    s = v if isinstance(v, str) else json.dumps(v, separators=(",", ":"), default=str)
    return s if len(s) <= limit else s[: limit - 1] + "…"
