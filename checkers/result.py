"""The result object (ARCHITECTURE's ``results.json``) and its verdict.

Validity follows Jepsen's Kafka checker: some anomalies are reported but
allowed, because Kafka promises less than serializability; which ones, and
why, is listed in the result so nobody has to guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checkers.cycles.kinds import SEARCH_TIMEOUT
from checkers.cycles.search import CycleReport
from checkers.kind import CycleSearch
from checkers.kinds import KINDS, explain

VALID, INVALID, UNKNOWN = True, False, "unknown"


def allowed_kinds(counts: dict[str, dict[str, int]]) -> dict[str, str]:
    """Kinds present but allowed (:attr:`checkers.kind.Kind.allowed`), each
    with the reason."""
    allowed: dict[str, str] = {}
    for kind, c in counts.items():
        allowance = KINDS[kind].allowed
        if c["total"] and allowance is not None and allowance.allows(c["total"], c["allowed"]):
            allowed[kind] = allowance.why
    return allowed


def verdict(counts: dict[str, dict[str, int]], allowed: dict[str, str]) -> bool | str:
    """Invalid if any kind not allowed is present; unknown if only a search
    timeout is, which proves nothing either way."""
    failing = [k for k, c in counts.items() if c["total"] and k not in allowed]
    if any(KINDS[k].finder is not CycleSearch.TIMEOUT for k in failing):
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
    for kind, n in cycles.counts.items():  # a cycle that needs a ww edge is allowed
        counts[kind] = {"total": n, "allowed": n - cycles.pure_counts.get(kind, 0)}
    if cycles.timeouts:
        cases[SEARCH_TIMEOUT.name] = list(cycles.timeouts)
        counts[SEARCH_TIMEOUT.name] = {"total": len(cycles.timeouts), "allowed": 0}
    anomalies: dict[str, list[dict[str, Any]]] = {}
    for kind in sorted(cases):
        shown = cases[kind]
        if KINDS[kind].finder is CycleSearch.CYCLE:  # the failing (pure wr) cycles first
            shown = sorted(shown, key=lambda c: not c.get("pure_wr", False))
        anomalies[kind] = [{**c, "explanation": explain(kind, c)} for c in shown[:cap]]
    allowed = allowed_kinds(counts)
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


def anomaly_counts(results: Mapping[str, Any]) -> dict[str, int]:
    """Each anomaly kind of a result with its exact count: the checker's total
    (``stats.anomaly_counts``), since it stores only the first instances of a
    kind; the stored instances for a result without totals."""
    stats = results.get("stats")
    totals = (stats.get("anomaly_counts") if isinstance(stats, Mapping) else None) or {}
    counts = {}
    for kind, instances in (results.get("anomalies") or {}).items():
        total = totals.get(kind)
        counts[kind] = total if isinstance(total, int) else len(list(instances or ()))
    return counts
