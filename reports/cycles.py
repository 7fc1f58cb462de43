"""Cycle diagrams (G0, G1c, ...).

The checker found the cycles; this module only gathers, for each one, the
ops it passes through with their real times and each edge's relation, key
and offsets, so the page can draw the cycle as a graph and the
linearizability view (:mod:`reports.linear`) can place a ``-realtime``
cycle's ops on the partition logs it passes through.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from reports.kinds import instance_ops, is_cycle, is_realtime
from reports.pairs import Pairs, short
from workloads.keys import run_key_map

MAX_CYCLES = 50  # per kind
KEY_MAP_FIELDS = ("key_map", "keys", "topic_partitions", "partitions")


def cycle_views(pairs: Pairs, results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every cycle instance of a cycle kind, with its ops and labelled edges;
    forbidden kinds first."""
    row_of = pairs.rows_of(instance_ops(results.get("anomalies") or {}))
    out = []
    allowed = set(results.get("allowed") or ())
    anomalies = results.get("anomalies") or {}
    for kind in sorted(anomalies, key=lambda k: (k in allowed, k)):  # forbidden kinds first
        instances = anomalies[kind]
        if not is_cycle(kind):
            continue
        for inst in list(instances or ())[:MAX_CYCLES]:
            if isinstance(inst, Mapping):
                out.append(_cycle(pairs, row_of, kind, inst))
    return out


def _cycle(
    pairs: Pairs, row_of: dict[int, int], kind: str, inst: Mapping[str, Any]
) -> dict[str, Any]:
    steps = [s for s in inst.get("steps") or () if isinstance(s, Mapping)]
    ends = [(_ref(s.get("from")), _ref(s.get("to"))) for s in steps]
    if steps and all(a is not None and b is not None for a, b in ends):
        ops = list(dict.fromkeys(i for pair in ends for i in pair if i is not None))
        pos = {idx: i for i, idx in enumerate(ops)}
        edges = [
            _edge(pos[a], pos[b], s)
            for (a, b), s in zip(ends, steps, strict=True)
            if a is not None and b is not None
        ]
    else:  # no steps: the ops named, in order, as a ring
        ops = instance_ops(inst)
        edges = [
            _edge(i, (i + 1) % len(ops), steps[i] if i < len(steps) else {})
            for i in range(len(ops))
        ]
    nodes = [_node(pairs, row_of, idx) for idx in ops]
    keys = sorted({k for n in nodes for k in n.pop("keys")}, key=natural_key)
    return {
        "kind": kind,
        "realtime": is_realtime(kind),
        "explanation": str(inst.get("explanation", "")),
        "nodes": nodes,
        "edges": edges,
        "keys": keys,
    }


def _ref(v: Any) -> int | None:
    """A step's end: an op map with an ``index``, or a bare index."""
    if isinstance(v, Mapping):
        v = v.get("index")
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _edge(a: int, b: int, step: Mapping[str, Any]) -> dict[str, Any]:
    rel = step.get("rel", step.get("type"))
    key = step.get("key")
    label = " ".join(str(x) for x in (rel, key) if x is not None)
    detail = {k: v for k, v in step.items() if k not in ("from", "to", "explanation")}
    return {
        "from": a,
        "to": b,
        "rel": rel,
        "key": None if key is None else str(key),
        "offsets": _step_offsets(step),
        "label": label,
        "text": str(step.get("explanation") or short(detail, 200)),
    }


def _step_offsets(step: Mapping[str, Any]) -> list[int | None]:
    """The offsets on the step's key of its two ends: a ww step's ``o1`` and
    ``o2``; a wr step's ``offset``, where one sent and the other polled."""
    if "o1" in step or "o2" in step:
        ends = [step.get("o1"), step.get("o2")]
    else:
        ends = [step.get("offset")] * 2
    return [v if isinstance(v, int) and not isinstance(v, bool) else None for v in ends]


def _partition_label(v: Any) -> str:
    """``["t", 0]`` or ``{"topic": "t", "partition": 0}`` → ``t/0``; else the value."""
    if isinstance(v, list) and len(v) == 2:
        return f"{v[0]}/{v[1]}"
    if isinstance(v, Mapping) and {"topic", "partition"} <= set(v):
        return f"{v['topic']}/{v['partition']}"
    return short(v, 60)


def natural_key(k: str) -> tuple[int, int | str]:
    """Numeric keys in number order, before the others."""
    return (0, int(k)) if k.lstrip("-").isdigit() else (1, k)


def _node(pairs: Pairs, row_of: dict[int, int], idx: int) -> dict[str, Any]:
    row = row_of.get(idx)
    if row is None:
        return {
            "index": idx,
            "process": "?",
            "f": "?",
            "type": "?",
            "t0": None,
            "t1": None,
            "value": "(not in history)",
            "keys": [],
        }
    t1 = pairs.t1[row]
    return {
        "index": idx,
        "process": pairs.process[row],
        "f": pairs.f[row],
        "type": pairs.type[row],
        "t0": round(float(pairs.t0[row]), 6),
        "t1": None if np.isnan(t1) else round(float(t1), 6),
        "value": short(pairs.value(row), 160),
        "keys": sorted(pairs.flat.op_keys(int(pairs.shown[row]))),
    }


def key_labels(pairs: Pairs, config: Mapping[str, Any]) -> dict[str, str]:
    """Key → topic-partition label from ``test.json`` when it records the map
    (of the keys a run starts with; the keys that rotated in later placed by
    the run's ``namespace``, as the run placed them); else every key the
    history touches, labelled by itself."""
    keys = np.unique(pairs.flat.key[pairs.flat.has_key]).tolist()
    for name in KEY_MAP_FIELDS:
        m = config.get(name)
        if isinstance(m, Mapping) and m:
            labels = {str(k): _partition_label(v) for k, v in m.items()}
            if isinstance(namespace := config.get("namespace"), str):
                key_map = run_key_map(namespace)
                for k in keys:
                    labels.setdefault(str(k), _partition_label(list(key_map.topic_partition(k))))
            return labels
    return {str(k): str(k) for k in keys}
