"""The linearizability view of each partition log (Porcupine's visualizer, for a log).

A partition is a linearizable log when every send takes effect at one
instant between its invocation and its completion, in offset order: a send
that completed before another began must land below it. The view draws each
send as a bar from invocation to completion at the height of the offset it
got, so an inversion is a pair whose bars run the wrong way.

The checker's ``-realtime`` cycles name the pairs it proved (one witness
cycle per component, so not every pair); their ops are placed by the offsets
their steps give. For the picture to hold every inversion, this module also
pairs each send that landed below a send completed before it began with the
highest such send (:func:`inversions`). The verdict stays the checker's.

Keys are ordered those with violations first, then those anomalies name;
the first ``MAX_LISTED`` are listed and the first ``MAX_KEYS`` carry their
intervals, at most ``MAX_INTERVALS`` each: the ops of the key's first
``MAX_PAIRS`` pairs, the sends within ``CONTEXT`` offsets of them, then an
even sample of the rest. The page says how many it left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from reports.cycles import natural_key
from reports.pairs import Pairs

MAX_KEYS = 16  # keys whose intervals the page carries
MAX_LISTED = 500  # keys the selector lists, with their counts
MAX_INTERVALS = 1200  # per key
MAX_PAIRS = 200  # violations drawn per key; the count is exact
CONTEXT = 20  # sends either side (in offset order) of each op of a pair


@dataclass(slots=True)
class Sends:
    """Every acknowledged send's record, sorted by key then offset."""

    key: np.ndarray
    offset: np.ndarray
    value: np.ndarray
    row: np.ndarray  # the op's row in ``Pairs``

    def of_key(self, key: int) -> slice:
        lo, hi = np.searchsorted(self.key, [key, key + 1])
        return slice(int(lo), int(hi))


def sends(pairs: Pairs) -> Sends:
    """The records OK ops sent, with their offsets (a txn's sends included)."""
    fl = pairs.flat
    hit = np.flatnonzero(fl.has_key & fl.has_offset & fl.has_value & (fl.mop == "send"))
    row_of_pos = np.full(len(fl.heads), -1, dtype=np.int64)
    row_of_pos[pairs.shown] = np.arange(len(pairs))
    rows = row_of_pos[fl.op_of_row[hit]]
    ok = rows >= 0
    ok[ok] = pairs.type[rows[ok]] == "ok"
    hit, rows = hit[ok], rows[ok]
    order = np.lexsort((fl.offset[hit], fl.key[hit]))
    hit, rows = hit[order], rows[order]
    return Sends(fl.key[hit], fl.offset[hit], fl.value[hit], rows)


def inversions(offset: np.ndarray, t0: np.ndarray, t1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Realtime-order violations among one key's sends: ``(a, b)`` positions
    where ``a`` completed before ``b`` was invoked yet got a higher offset.
    Each such ``b`` appears once, with the highest-offset such ``a``."""
    n = len(offset)
    if n < 2:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    by_end = np.argsort(t1, kind="stable")
    ends, offs = t1[by_end], offset[by_end]
    top = np.maximum.accumulate(offs)
    top_at = np.maximum.accumulate(np.where(offs == top, np.arange(n), 0))
    before = np.searchsorted(ends, t0, side="left")  # sends completed before each began
    has = before > 0
    last = np.maximum(before - 1, 0)
    b = np.flatnonzero(has & (top[last] > offset))
    return by_end[top_at[last[b]]], b


def select(n: int, focus: np.ndarray, budget: int, context: int) -> tuple[np.ndarray, int]:
    """Positions to keep out of ``n`` (ascending) and how many came from the
    windows: ``focus`` itself, then rings ever farther from it up to
    ``context``, then an even sample of the rest, ``budget`` in all."""
    chosen = np.unique(focus)[:budget]
    for d in range(1, context + 1):
        if len(chosen) >= budget:
            break
        ring = np.concatenate([focus - d, focus + d])
        ring = np.setdiff1d(ring[(ring >= 0) & (ring < n)], chosen)
        chosen = np.union1d(chosen, ring[: budget - len(chosen)])
    windowed = len(chosen)
    rest = np.setdiff1d(np.arange(n), chosen)
    room = budget - len(chosen)
    if room < len(rest):
        rest = rest[np.unique(np.linspace(0, len(rest) - 1, room).round().astype(np.int64))]
    return np.union1d(chosen, rest), windowed


def linear_view(
    pairs: Pairs,
    labels: Mapping[str, str],
    cycles: list[dict[str, Any]],
    results: Mapping[str, Any],
) -> dict[str, Any]:
    """Per key (partition): its sends as intervals, its violations, and which
    ``-realtime`` cycles pass through it (their index in ``cycles``)."""
    all_sends = sends(pairs)
    realtime = [i for i, c in enumerate(cycles) if c["realtime"]]
    keyed = np.unique(all_sends.key).tolist()
    names = {str(k) for k in keyed} | set(labels)
    named = _anomaly_keys(results)
    found = {}
    for name in names:
        span = all_sends.of_key(int(name)) if _is_int(name) else slice(0, 0)
        a, b = inversions(*_times(pairs, all_sends, span))
        hits = [i for i in realtime if name in cycles[i]["keys"]]
        placed = _placed([cycles[i] for i in hits], hits, pairs, all_sends, span)
        found[name] = (span, a, b, hits, placed)

    def rank(k: str) -> tuple[bool, bool, bool, tuple[int, int | str]]:
        _, _, b, hits, placed = found[k]
        return (not (len(b) or placed["pairs"]), not hits, k not in named, natural_key(k))

    keys = []
    for i, name in enumerate(sorted(names, key=rank)[:MAX_LISTED]):
        span, a, b, hits, placed = found[name]
        entry = {
            "key": name,
            "label": labels.get(name, name),
            "sends": span.stop - span.start,
            "violations": len(b),
            "checker_pairs": len(placed["pairs"]),
            "cycles": hits,
            "named": name in named,
        }
        if i < MAX_KEYS:
            entry.update(_intervals(pairs, all_sends, span, a, b, placed))
        keys.append(entry)
    return {
        "checked": _checked(results),
        "keys": keys,
        "unlisted": len(names) - len(keys),
        "unplaced": [i for i in realtime if not cycles[i]["keys"]],
        "max_keys": MAX_KEYS,
        "max_intervals": MAX_INTERVALS,
        "max_pairs": MAX_PAIRS,
    }


def _is_int(name: str) -> bool:
    return name.lstrip("-").isdigit()


def _times(pairs: Pairs, s: Sends, span: slice) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = s.row[span]
    return s.offset[span], pairs.t0[rows], pairs.t1[rows]


def _intervals(
    pairs: Pairs,
    s: Sends,
    span: slice,
    a: np.ndarray,
    b: np.ndarray,
    placed: dict[str, Any],
) -> dict[str, Any]:
    """The key's bounded intervals (columns) and its violation pairs, as
    positions in those columns (``[a, b, cycle]``: ``a`` completed before
    ``b`` began; ``cycle`` the checker's cycle naming them, or -1)."""
    key_rows = s.row[span]
    index = pairs.complete[key_rows]  # the OK completion, as the checker names ops
    checker_pairs = {(x["from"], x["to"]) for x in placed["pairs"]}
    found = [
        (int(x), int(y))
        for x, y in zip(a.tolist(), b.tolist(), strict=True)
        if (int(index[x]), int(index[y])) not in checker_pairs
    ]
    computed = found[:MAX_PAIRS]
    focus = np.array([p for xy in computed for p in xy] + placed["positions"], dtype=np.int64)
    keep, windowed = select(len(key_rows), focus, MAX_INTERVALS, CONTEXT)
    at = {int(p): i for i, p in enumerate(keep.tolist())}
    rows = key_rows[keep]
    cols: dict[str, list[Any]] = {
        "t0": np.round(pairs.t0[rows], 6).tolist(),
        "t1": np.round(pairs.t1[rows], 6).tolist(),
        "offset": s.offset[span][keep].tolist(),
        "value": s.value[span][keep].tolist(),
        "index": index[keep].tolist(),
        "process": pairs.process[rows].tolist(),
        "f": pairs.f[rows].tolist(),
        "mop": ["w"] * len(keep),
    }
    slot = {(int(index[p]), int(s.offset[span][p])): at[int(p)] for p in keep.tolist()}
    for op in placed["reads"]:  # polls a cycle names: placed at the offset they read
        slot[(op["index"], op["offset"])] = len(cols["t0"])
        for name in ("t0", "t1", "offset", "value", "index", "process", "f"):
            cols[name].append(op[name])
        cols["mop"].append("r")
    drawn = [[at[x], at[y], -1] for x, y in computed if x in at and y in at]
    for p in placed["pairs"]:
        x, y = slot.get((p["from"], p["from_offset"])), slot.get((p["to"], p["to_offset"]))
        if x is not None and y is not None:
            drawn.append([x, y, p["cycle"]])
    return {
        "ops": cols,
        "pairs": drawn,
        "pairs_total": len(found) + len(placed["pairs"]),
        "windowed": windowed,
        "sampled": len(keep) - windowed,
    }


def _placed(
    cycles: list[dict[str, Any]], cycle_ids: list[int], pairs: Pairs, s: Sends, span: slice
) -> dict[str, Any]:
    """Where the ops of the key's ``-realtime`` cycles sit on it: the positions
    of their sends, the polls they name (as extra intervals) and their realtime
    edges whose two ends both sit on the key."""
    key = str(s.key[span.start]) if span.stop > span.start else None
    offsets = s.offset[span]
    rows = s.row[span]
    complete = pairs.complete[rows]
    positions: list[int] = []
    reads: list[dict[str, Any]] = []
    out_pairs: list[dict[str, Any]] = []
    for c, ci in zip(cycles, cycle_ids, strict=True):
        at: dict[int, int] = {}  # node → offset on this key
        for e in c["edges"]:
            if key is not None and e.get("key") == key:
                for end, off in zip(
                    (e["from"], e["to"]), e.get("offsets") or (None, None), strict=True
                ):
                    if off is not None:
                        at.setdefault(end, off)
        for node, off in at.items():
            nd = c["nodes"][node]
            hit = np.flatnonzero((complete == nd["index"]) & (offsets == off))
            if len(hit):
                positions.append(int(hit[0]))
            elif nd["t0"] is not None:
                reads.append(
                    {
                        "index": nd["index"],
                        "offset": off,
                        "t0": nd["t0"],
                        "t1": nd["t1"],
                        "value": None,
                        "process": nd["process"],
                        "f": nd["f"],
                    }
                )
        for e in c["edges"]:
            if e["rel"] == "realtime" and e["from"] in at and e["to"] in at:
                a, b = c["nodes"][e["from"]], c["nodes"][e["to"]]
                out_pairs.append(
                    {
                        "from": a["index"],
                        "to": b["index"],
                        "from_offset": at[e["from"]],
                        "to_offset": at[e["to"]],
                        "cycle": ci,
                    }
                )
    return {"positions": positions, "reads": reads, "pairs": out_pairs}


def _anomaly_keys(results: Mapping[str, Any]) -> set[str]:
    """Keys that some anomaly instance names."""
    out = set()
    for instances in (results.get("anomalies") or {}).values():
        for inst in instances or ():
            if isinstance(inst, Mapping) and inst.get("key") is not None:
                out.add(str(inst["key"]))
    return out


def _checked(results: Mapping[str, Any]) -> bool:
    """Whether the checker looked for ``-realtime`` cycles at all."""
    stats = results.get("stats")
    if isinstance(stats, Mapping) and "graph" in stats:
        return True
    kinds = stats.get("checked") if isinstance(stats, Mapping) else None
    named = [*(results.get("anomalies") or {}), *(kinds or ()), *(results.get("allowed") or ())]
    return any(str(k).endswith("-realtime") for k in named)
