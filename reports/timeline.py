"""What the timeline and the plots draw besides the ops: which nodes each
fault hit, and where the final phase begins.

A nemesis op's completion says exactly what it did (``nemesis.base``): the
nodes it killed or paused, the grudge a partition applied, the nodes whose
clock it moved. The timeline gives each fault kind a lane and writes those
nodes on the fault's bar, as Jepsen's timeline does; a plot has no room for
a lane per kind, so its lane bars carry a title that says what the fault did
as well. After the main phase (``time_limit``) the runner heals, waits for
recovery and polls everything once more; that final phase can last as long
as the run itself, so the timeline labels it and compresses it, and the
plots shade it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reports.pairs import Fault, short

#: completion fields (``nemesis.process``, ``clock``, ``disk``) listing the nodes hit;
#: last, the ``targets`` a replayed start was pinned to, for one that never completed
NODE_FIELDS = ("killed", "paused", "nodes", "targets")
LABEL_CHARS = 80


def fault_nodes(value: Any) -> tuple[list[str], str]:
    """The nodes a fault's completion names, sorted, and a short label of what
    it did to them: ``n1 ⟂ n2 n3`` for a partition (n1 cut off from n2 and
    n3), ``clients ⟂ n2`` for nodes cut off from the clients, else the nodes."""
    if isinstance(value, Mapping):
        if isinstance(value.get("cut"), list) and value["cut"]:
            names = sorted(map(str, value["cut"]))
            return names, "clients \u27c2 " + " ".join(names)
        for field in NODE_FIELDS:
            nodes = value.get(field)
            if isinstance(nodes, list) and nodes:
                names = sorted(map(str, nodes))
                return names, " ".join(names) + _clock_shift(value)
        grudge = value.get("grudge", value)
        if (
            isinstance(grudge, Mapping)
            and grudge
            and all(isinstance(v, list) for v in grudge.values())
        ):
            return _grudge(grudge)
    return [], short(value, LABEL_CHARS) if value is not None else ""


def _clock_shift(value: Mapping[str, Any]) -> str:
    """How far a clock fault moved the nodes' clocks, if it says."""
    for field in ("offset_ms", "delta_ms"):
        if isinstance(value.get(field), int | float):
            return f" {value[field]:+g} ms"
    return ""


def _grudge(grudge: Mapping[str, list[Any]]) -> tuple[list[str], str]:
    """A grudge (node → the nodes it drops) as sides: nodes that drop the same
    set form a side; a side whose mirror image is already written is left out,
    so a clean split reads ``n1 ⟂ n2 n3`` once."""
    sides: dict[tuple[str, ...], list[str]] = {}
    for node, drops in grudge.items():
        if drops:
            sides.setdefault(tuple(sorted(map(str, drops))), []).append(str(node))
    written: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
    for dropped, nodes in sides.items():
        side = tuple(sorted(nodes))
        if (dropped, side) not in written:
            written.append((side, dropped))
    names = sorted({n for side, drops in written for n in side + drops})
    return names, "; ".join(" ".join(s) + " \u27c2 " + " ".join(d) for s, d in written)


def fault_lanes(faults: list[Fault]) -> list[dict[str, Any]]:
    """The faults as the timeline's nemesis lanes: one per fault kind, in order
    of first use, each fault with the nodes it hit, its label for the
    timeline's bar (the nodes) and its title for a plot's lane bar (what it
    did, then the nodes: ``kill: n2``, ``partition majority: n1 ⟂ n2 n3``)."""
    lanes: dict[str, list[dict[str, Any]]] = {}
    for fault in faults:
        nodes, label = fault_nodes(fault.value)
        what = " ".join(filter(None, (fault.f.removeprefix("start-"), _kind(fault.value))))
        lanes.setdefault(fault.kind, []).append(
            {
                **fault.to_json(),
                "nodes": nodes,
                "label": label or fault.f,
                "title": f"{what}: {label}" if nodes else what,
            }
        )
    return [{"kind": kind, "faults": fs} for kind, fs in lanes.items()]


def _kind(value: Any) -> str:
    """Which kind of its fault a start asked for (a partition's ``majority``),
    given alone or under ``kind``."""
    kind = value.get("kind") if isinstance(value, Mapping) else value
    return kind if isinstance(kind, str) else ""


def final_phase(config: Mapping[str, Any], end: float) -> float | None:
    """When the final phase (heal, recovery wait, final reads) began, in
    seconds: the test's ``time_limit``, when the history runs past it."""
    spec = config.get("spec")
    limit = spec.get("time_limit") if isinstance(spec, Mapping) else None
    if isinstance(limit, int | float) and not isinstance(limit, bool) and 0 < limit < end:
        return float(limit)
    return None
