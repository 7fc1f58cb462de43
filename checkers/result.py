"""The result object (ARCHITECTURE's ``results.json``) and its verdict.

Validity follows Jepsen's Kafka checker: some anomalies are reported but
allowed, because Kafka promises less than serializability; which ones, and
why, is listed in the result so nobody has to guess.
"""

from __future__ import annotations

from typing import Any

from checkers.cycles.search import CycleReport
from checkers.explain import explain

VALID, INVALID, UNKNOWN = True, False, "unknown"

WRITES_NOT_ISOLATED = (
    "Kafka transactions do not isolate writes, so another producer's records may "
    "interleave with a transaction's"
)
ALWAYS_ALLOWED = {
    "int-send-skip": WRITES_NOT_ISOLATED,
    "G0": WRITES_NOT_ISOLATED + ": write cycles are normal in Kafka's transaction model",
    "G0-process": WRITES_NOT_ISOLATED + ": write cycles are normal in Kafka's transaction model",
    "G0-realtime": WRITES_NOT_ISOLATED + ": write cycles are normal in Kafka's transaction model",
}
G1C_KINDS = ("G1c", "G1c-process", "G1c-realtime")
MOVED_POSITION_KINDS = ("poll-skip", "nonmonotonic-poll", "int-nonmonotonic-poll")
TIMEOUT = "cycle-search-timeout"


def allowed_kinds(
    counts: dict[str, dict[str, int]], cycles: CycleReport, ww_deps: bool
) -> dict[str, str]:
    """Kinds present but allowed, each with the reason."""
    allowed: dict[str, str] = {}
    for kind, c in counts.items():
        if c["total"] == 0:
            continue
        if kind in ALWAYS_ALLOWED:
            allowed[kind] = ALWAYS_ALLOWED[kind]
        elif kind in G1C_KINDS and ww_deps and cycles.pure_counts.get(kind, 0) == 0:
            allowed[kind] = (
                "every such cycle needs a ww edge, and "
                + WRITES_NOT_ISOLATED
                + " (use --no-ww-deps to look for pure wr cycles)"
            )
        elif kind in MOVED_POSITION_KINDS and c["allowed"] == c["total"]:
            allowed[kind] = (
                "every instance is on a key its process consumed via subscribe, where "
                "rebalances may move the position, or follows an offset reset its "
                "consumer logged (auto.offset.reset after an out-of-range fetch)"
            )
    return allowed


def verdict(counts: dict[str, dict[str, int]], allowed: dict[str, str]) -> bool | str:
    failing = [k for k, c in counts.items() if c["total"] and k not in allowed]
    if any(k != TIMEOUT for k in failing):
        return INVALID
    return UNKNOWN if failing else VALID


def build_result(
    cases: dict[str, list[dict[str, Any]]],
    counts: dict[str, dict[str, int]],
    cycles: CycleReport,
    *,
    ww_deps: bool,
    cap: int,
    stats: dict[str, Any],
    timings: dict[str, Any],
) -> dict[str, Any]:
    """Merges case finders' and the cycle search's findings into the result."""
    cases = {k: list(v) for k, v in cases.items()}
    counts = {k: dict(v) for k, v in counts.items()}
    for cyc in cycles.cycles:
        cases.setdefault(cyc["kind"], []).append(cyc)
    for kind, n in cycles.counts.items():
        counts[kind] = {"total": n, "allowed": n - cycles.pure_counts.get(kind, 0)}
    if cycles.timeouts:
        cases[TIMEOUT] = list(cycles.timeouts)
        counts[TIMEOUT] = {"total": len(cycles.timeouts), "allowed": 0}
    anomalies: dict[str, list[dict[str, Any]]] = {}
    for kind in sorted(cases):
        shown = cases[kind]
        if kind in G1C_KINDS:  # the failing (pure wr) cycles first
            shown = sorted(shown, key=lambda c: not c.get("pure_wr", False))
        anomalies[kind] = [{**c, "explanation": explain(kind, c)} for c in shown[:cap]]
    allowed = allowed_kinds(counts, cycles, ww_deps)
    return {
        "valid": verdict(counts, allowed),
        "anomalies": anomalies,
        "allowed": sorted(allowed),
        "allowed_why": allowed,
        "stats": {
            **stats,
            "anomaly_counts": {k: c["total"] for k, c in sorted(counts.items()) if c["total"]},
            "ww_deps": ww_deps,
        },
        "timings": timings,
    }
