"""The anomaly sections and the slice of the history the page embeds.

A report must stay small for a 1M-op history, so the page carries a bounded
table of operations: every op an anomaly names, a few neighbours of each for
context, then the start of the history until the budget is spent. The page
states how many of how many ops it holds; the full history stays beside it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from checkers.result import anomaly_counts
from reports.bursts import bursts
from reports.kinds import explain, instance_ops, is_realtime
from reports.pairs import Pairs, short

MAX_INSTANCES = 200  # per kind shown in the page; the count is always exact
MAX_BURSTS = MAX_INSTANCES  # lines per kind; each shows at least one instance
MAX_ROWS = 20_000  # ops embedded in the history table and timeline
CONTEXT = 3  # neighbouring rows kept around each op an anomaly names
VALUE_CHARS = 160


def stats_of(results: Mapping[str, Any]) -> dict[str, Any]:
    """The result's ``stats`` map, or an empty one if it has none."""
    stats = results.get("stats")
    return stats if isinstance(stats, dict) else {}


def anomaly_sections(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One section per anomaly kind, failing kinds first, its instances grouped
    into bursts (see :mod:`reports.bursts`). The count is the checker's total
    (``stats.anomaly_counts``) when it gives one, since it may store only the
    first instances of a kind."""
    anomalies = results.get("anomalies") or {}
    allowed = set(results.get("allowed") or ())
    why = results.get("allowed_why") or {}
    counts = anomaly_counts(results)
    out = []
    for kind, instances in anomalies.items():
        instances = list(instances or [])
        lines, shown = burst_lines(kind, instances)
        out.append(
            {
                "kind": kind,
                "count": counts[kind],
                "stored": len(instances),
                "allowed": kind in allowed,
                "why": str(why.get(kind, "")) if isinstance(why, Mapping) else "",
                "realtime": is_realtime(kind),
                "explanation": explain(kind),
                "instances": [instance_view(instances[i]) for i in shown],
                "bursts": lines,
                "unlisted": len(instances) - sum(b["count"] for b in lines),
            }
        )
    out.sort(key=lambda s: (s["allowed"], -s["count"], s["kind"]))
    return out


def burst_lines(
    kind: str, instances: list[Any], budget: int = MAX_INSTANCES, max_lines: int = MAX_BURSTS
) -> tuple[list[dict[str, Any]], list[int]]:
    """The first ``max_lines`` bursts of a kind's stored instances as the page's
    lines, and which instances the page embeds (at most ``budget``, in line
    order). Every line embeds its first instance, so a lone instance still reads
    as its sentence; the rest of the budget goes to the lines in order. A line's
    ``first`` and ``shown`` say which of the embedded instances are its own."""
    groups = bursts(instances)[:max_lines]
    spare = budget - len(groups)
    lines, shown = [], []
    for g in groups:
        take = 1 + max(0, min(len(g.members) - 1, spare))
        spare -= take - 1
        lines.append(
            {"label": g.label(kind), "count": len(g.members), "first": len(shown), "shown": take}
        )
        shown += g.members[:take]
    return lines, shown


def instance_view(instance: Any) -> dict[str, Any]:
    """An instance as the page shows it: its sentence, the ops it names, other fields."""
    if not isinstance(instance, Mapping):
        return {"explanation": short(instance, 300), "ops": [], "fields": {}}
    fields = {
        k: _field(k, v) for k, v in instance.items() if k != "explanation" and not _holds_ops(v)
    }
    return {
        "explanation": str(instance.get("explanation", "")),
        "ops": instance_ops(instance),
        "fields": fields,
    }


def _field(name: str, value: Any) -> str:
    """A field's text; ``evident``, when the anomaly became visible, in seconds."""
    if name == "evident" and isinstance(value, int):
        return f"{value / 1e9:.3f} s into the run"
    return short(value, 120)


def _holds_ops(v: Any) -> bool:
    """Op references and cycle steps: shown as links, not as raw fields."""
    items = v if isinstance(v, list) else [v]
    return any(isinstance(x, Mapping) for x in items)


def named_ops(results: Mapping[str, Any]) -> list[int]:
    """Every history index the shown instances name, in section order."""
    seen: dict[int, None] = {}
    for section in anomaly_sections(results):
        for inst in section["instances"]:
            for idx in inst["ops"]:
                seen.setdefault(idx, None)
    return list(seen)


def select_rows(
    pairs: Pairs, focus: Iterable[int], budget: int = MAX_ROWS, context: int = CONTEXT
) -> np.ndarray:
    """Rows to embed, ascending: ``focus`` history indices with ``context`` rows
    either side, then rows from the start of the history, at most ``budget``."""
    n = len(pairs)
    if n <= budget:
        return np.arange(n)
    focus = list(focus)
    row_of = pairs.rows_of(focus)
    chosen: set[int] = set()
    for idx in focus:
        row = row_of.get(idx)
        if row is None:
            continue
        for r in range(max(0, row - context), min(n, row + context + 1)):
            if len(chosen) >= budget:
                break
            chosen.add(r)
    r = 0
    while len(chosen) < budget and r < n:
        chosen.add(r)
        r += 1
    return np.array(sorted(chosen), dtype=np.int64)


def table_columns(pairs: Pairs, rows: np.ndarray) -> dict[str, list[Any]]:
    """The embedded ops as columns (compact JSON): indices, process, f, type, times,
    value and error, times in seconds."""
    return {
        "invoke": pairs.invoke[rows].tolist(),
        "complete": pairs.complete[rows].tolist(),
        "process": pairs.process[rows].tolist(),
        "f": pairs.f[rows].tolist(),
        "type": pairs.type[rows].tolist(),
        "t0": np.round(pairs.t0[rows], 6).tolist(),
        "t1": [None if np.isnan(t) else round(float(t), 6) for t in pairs.t1[rows]],
        "value": [short(pairs.value(r), VALUE_CHARS) for r in rows.tolist()],
        "error": [pairs.error[r] for r in rows.tolist()],
    }
