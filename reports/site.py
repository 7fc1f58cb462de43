"""The index of stored runs that ``jepka serve`` shows: name, time, the
settings triage sorts by (workload, nemesis, bug modes, seed, where the run
came from), verdict and anomaly counts.

A run is any folder under the store holding ``results.json`` or a history;
``latest`` links are skipped so each run is listed once. Suites
(``suites/<name>/<time>/``, written by ``jepka suite``) are listed apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from checkers.result import anomaly_counts

RUN_FILES = (
    "report.html",
    "results.json",
    "junit.xml",
    "test.json",
    "history.jsonl",
    "history.parquet",
)
MARKERS = ("results.json", "history.jsonl", "history.parquet")
MAX_DEPTH = 4


def list_runs(store: Path) -> list[dict[str, Any]]:
    """Runs under ``store``, newest first (by folder name, which is the start time)."""
    runs = [_describe(store, d) for d in _run_dirs(store, store, 0)]
    runs.sort(key=lambda r: (r["time"], r["name"]), reverse=True)
    return runs


def _run_dirs(store: Path, d: Path, depth: int) -> list[Path]:
    if depth > MAX_DEPTH:
        return []
    try:
        children = sorted(p for p in d.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return []
    found = [d] if any((d / m).is_file() for m in MARKERS) and d != store else []
    for c in children:
        if c.name not in ("nodes", "suites"):
            found.extend(_run_dirs(store, c, depth + 1))
    return found


def _describe(store: Path, d: Path) -> dict[str, Any]:
    rel = d.relative_to(store).as_posix()
    try:
        test = json.loads((d / "test.json").read_text())
    except (OSError, ValueError):
        test = {}
    spec = test.get("spec") if isinstance(test, dict) and isinstance(test.get("spec"), dict) else {}
    origin = test.get("origin") if isinstance(test, dict) else None
    verdict: str | None = None
    counts: dict[str, int] = {}
    try:
        results = json.loads((d / "results.json").read_text())
        v = results.get("valid")
        verdict = "valid" if v is True else "invalid" if v is False else "unknown"
        counts = anomaly_counts(results)
    except (OSError, ValueError, AttributeError):
        pass
    return {
        "name": d.parent.name if d.parent != store else d.name,
        "time": d.name,
        "path": rel,
        "href": f"/{rel}/",
        "workload": str(spec.get("workload", "")),
        "nemesis": _listed(spec.get("nemesis")),
        "bug": _listed(spec.get("bug")),
        "seed": spec.get("seed", ""),
        "origin": origin.get("kind", "") if isinstance(origin, dict) else "",
        "verdict": verdict,
        "anomalies": counts,
        "files": [f for f in RUN_FILES if (d / f).is_file()],
    }


def _listed(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value if v != "none")
    return "" if value in (None, "none") else str(value)


def list_suites(store: Path) -> list[dict[str, Any]]:
    """Suite results under ``store/suites``, newest first, with their case statuses."""
    out = []
    for index in (store / "suites").glob("*/*/index.html"):
        d = index.parent
        statuses: dict[str, int] = {}
        try:
            for case in json.loads((d / "suite.json").read_text()):
                statuses[case["status"]] = statuses.get(case["status"], 0) + 1
        except (OSError, ValueError, TypeError, KeyError):
            pass
        rel = d.relative_to(store).as_posix()
        out.append(
            {
                "name": d.parent.name,
                "time": d.name,
                "href": f"/{rel}/index.html",
                "statuses": statuses,
            }
        )
    out.sort(key=lambda r: (r["time"], r["name"]), reverse=True)
    return out
