"""Per-key offset diagrams (Jepsen's ``orders/``): ops as rows, offsets as columns.

Each cell is what one op wrote (``w``) or read (``r``) at one offset of the
key's partition. A column holding more than one value is a conflict and its
cells are coloured by value; values an anomaly names are outlined. Only keys
some anomaly names get a diagram, and each is windowed around the offsets in
question so a long log stays a readable picture.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from reports.kinds import instance_ops
from reports.pairs import Pairs, short

MAX_KEYS = 12
MAX_COLS = 80
MAX_DIAGRAM_ROWS = 120


def anomaly_keys(results: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Keys named by anomaly instances → the offsets, values and ops to focus on."""
    out: dict[str, dict[str, Any]] = {}
    for kind, instances in (results.get("anomalies") or {}).items():
        for inst in instances or ():
            if not isinstance(inst, Mapping) or inst.get("key") is None:
                continue
            focus = out.setdefault(
                str(inst["key"]), {"offsets": set(), "values": set(), "ops": set(), "kinds": set()}
            )
            focus["kinds"].add(kind)
            parts = [inst, *(m for m in inst.get("messages") or () if isinstance(m, Mapping))]
            for part in parts:
                for name in ("offset", "offsets", "prev_offset"):
                    focus["offsets"].update(_flat_ints(part.get(name)))
                # the values in question: those skipped over, else those named
                names = ("skipped",) if part.get("skipped") else ("value", "values")
                for name in names:
                    focus["values"].update(_flat_values(part.get(name)))
            focus["ops"].update(instance_ops(inst))
    return dict(sorted(out.items(), key=lambda kv: -len(kv[1]["ops"]))[:MAX_KEYS])


def _flat_ints(v: Any) -> list[int]:
    items = v if isinstance(v, list) else [v]
    return [x for x in items if isinstance(x, int) and not isinstance(x, bool)]


def _flat_values(v: Any) -> list[str]:
    if isinstance(v, list):
        return [short(x, 40) for x in v]
    return [] if v is None else [short(v, 40)]


def offset_diagrams(pairs: Pairs, results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One diagram per key some anomaly names (at most ``MAX_KEYS``)."""
    focus = anomaly_keys(results)
    if not focus:
        return []
    return [_diagram(pairs, key, focus[key], key_cells(pairs, key)) for key in focus]


def key_cells(pairs: Pairs, key: str) -> list[tuple[int, str, int | None, str]]:
    """``(row, w|r, offset, value)`` for every element a completed op sent to or
    polled from ``key``; offset ``None`` when the op does not know it."""
    fl = pairs.flat
    if not key.lstrip("-").isdigit():
        return []
    hit = np.flatnonzero(fl.has_key & fl.has_value & (fl.key == int(key)))
    row_of_pos = np.full(len(fl.heads), -1, dtype=np.int64)
    row_of_pos[pairs.shown] = np.arange(len(pairs))
    rows = row_of_pos[fl.op_of_row[hit]]
    out = []
    for r, e in zip(rows.tolist(), hit.tolist(), strict=True):
        if r < 0 or pairs.type[r] == "pending":
            continue
        off = int(fl.offset[e]) if fl.has_offset[e] else None
        out.append((r, "w" if fl.mop[e] == "send" else "r", off, str(int(fl.value[e]))))
    return out


def _diagram(
    pairs: Pairs, key: str, focus: dict[str, Any], cells: list[tuple[int, str, int | None, str]]
) -> dict[str, Any]:
    value_offsets: dict[str, set[int]] = {}
    for _, _, off, v in cells:
        if off is not None:
            value_offsets.setdefault(v, set()).add(off)
    centre = set(focus["offsets"])
    for v in focus["values"]:
        centre |= value_offsets.get(v, set())
    offsets = sorted({off for _, _, off, _ in cells if off is not None})
    window = _window(offsets, centre)
    lo, hi = (window[0], window[-1]) if window else (0, -1)
    rows_of_op: dict[int, list[list[Any]]] = {}
    unplaced: dict[int, list[str]] = {}
    column_values: dict[int, set[str]] = {}
    for row, kind, off, v in cells:
        if off is None:
            if v in focus["values"]:
                unplaced.setdefault(row, []).append(f"{kind}{v}")
            continue
        if lo <= off <= hi:
            rows_of_op.setdefault(row, []).append([off, kind, v])
            column_values.setdefault(off, set()).add(v)
    named_rows = {r for r in rows_of_op if _names(pairs, r, focus["ops"])}
    ordered = sorted(rows_of_op, key=lambda r: (r not in named_rows, r))[:MAX_DIAGRAM_ROWS]
    ordered.sort()
    return {
        "key": key,
        "kinds": sorted(focus["kinds"]),
        "offsets": window,
        "conflicts": sorted(off for off, vs in column_values.items() if len(vs) > 1),
        "highlight": sorted(focus["values"]),
        "total_offsets": len(offsets),
        "rows": [
            {
                "index": int(pairs.complete[r] if pairs.complete[r] >= 0 else pairs.invoke[r]),
                "process": pairs.process[r],
                "f": pairs.f[r],
                "type": pairs.type[r],
                "named": r in named_rows,
                "cells": rows_of_op[r],
                "unplaced": unplaced.get(r, []),
            }
            for r in ordered
        ],
        "truncated_rows": max(0, len(rows_of_op) - len(ordered)),
    }


def _names(pairs: Pairs, row: int, ops: set[int]) -> bool:
    return int(pairs.invoke[row]) in ops or int(pairs.complete[row]) in ops


def _window(offsets: list[int], centre: set[int]) -> list[int]:
    """At most ``MAX_COLS`` consecutive known offsets, centred on the focus offsets."""
    if len(offsets) <= MAX_COLS:
        return offsets
    anchors = [i for i, off in enumerate(offsets) if off in centre] or [len(offsets) - 1]
    mid = (anchors[0] + anchors[-1]) // 2
    start = max(0, min(mid - MAX_COLS // 2, len(offsets) - MAX_COLS))
    return offsets[start : start + MAX_COLS]
