"""Renders one run into ``report.html`` and ``junit.xml`` (and passes ``results.json`` through).

The page is one self-contained file: CSS and JS are inlined from
``reports/static`` and all data travels as one JSON blob that the script
draws from. The verdict, config and anomaly list are also rendered as plain
HTML, so the essentials read even with scripts off. Nothing here decides
validity: every judgement comes from ``results.json``.

Size bound: the blob holds at most ``MAX_ROWS`` ops, ``MAX_POINTS`` points per
plot series, ``MAX_SERIES`` series per checker-provided plot, ``MAX_INSTANCES``
instances per kind, ``MAX_EVENTS`` node-log lines and the linearizability
view's ``MAX_INTERVALS`` intervals for each of ``MAX_KEYS`` keys, so a report stays under
about 10 MB whatever the history's length.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from history import HistoryError
from reports.anomalies import (
    anomaly_sections,
    named_ops,
    select_rows,
    stats_of,
    table_columns,
)
from reports.cycles import cycle_views, key_labels
from reports.junit import junit_xml
from reports.linear import linear_view
from reports.nodes import node_events
from reports.orders import offset_diagrams
from reports.pairs import Pairs, load_pairs, short
from reports.run import Run, RunError, load_run
from reports.series import (
    highest,
    latency_quantiles,
    latency_raw,
    stat_series,
    throughput,
)
from reports.timeline import fault_lanes, final_phase

PACKAGE = Path(__file__).parent
STATIC = PACKAGE / "static"
UPLOT = Path("vendor", "uplot")  # uPlot, as its package ships it (see its README.md)
MAX_CONFIG_CHARS = 100_000
UNSEEN_STATS = ("unseen_series", "unseen")
LAG_STATS = ("realtime_lag", "realtime-lag")

_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(PACKAGE / "templates"),
    autoescape=jinja2.select_autoescape(["html", "j2"]),
    undefined=jinja2.StrictUndefined,
)


@dataclass(frozen=True, slots=True)
class Written:
    report: Path
    junit: Path
    results: Path


def write_report(run_dir: Path | str, results: dict[str, Any] | None = None) -> Written:
    """Writes ``results.json`` (when ``results`` is given), ``report.html`` and
    ``junit.xml`` into ``run_dir``; returns their paths."""
    run_dir = Path(run_dir)
    if results is not None:
        (run_dir / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    run = load_run(run_dir)
    data = report_data(run)
    written = Written(run_dir / "report.html", run_dir / "junit.xml", run_dir / "results.json")
    written.report.write_text(render_html(data))
    written.junit.write_text(junit_xml(run.results, f"jepka.{run.name}"))
    return written


def report_data(run: Run) -> dict[str, Any]:
    """Everything the page draws, bounded in size (see the module docstring)."""
    results = run.results
    stats = stats_of(results)
    hist = run.history_path()
    try:
        pairs, faults, end = load_pairs(hist)
    except HistoryError as e:
        raise RunError(str(e)) from e
    cycles = cycle_views(pairs, results)
    rows = select_rows(pairs, named_ops(results))
    return {
        "run": {"name": run.name, "time": run.time, "history": hist.name if hist else None},
        "verdict": results.get("valid"),
        "error": results.get("error"),
        "config": _bounded(run.config),
        "triage": triage(run.config, end),
        "summary": _summary(pairs),
        "sections": anomaly_sections(results),
        "allowed": list(results.get("allowed") or ()),
        "table": table_columns(pairs, rows),
        "end": end,
        "faults": [f.to_json() for f in faults],
        "latency_raw": latency_raw(pairs),
        "latency_quantiles": latency_quantiles(pairs, end),
        "throughput": throughput(pairs, end),
        "unseen": _first_series(stats, UNSEEN_STATS, 1.0),
        "lag": _first_series(stats, LAG_STATS, 1e-9),
        "lag_summary": _lag_summary(stats),
        "orders": offset_diagrams(pairs, results),
        "cycles": cycles,
        "linear": linear_view(pairs, key_labels(pairs, run.config), cycles, results),
        "nodes": node_events(run.path, _started_at(run.config)),
        "timeline": {"lanes": fault_lanes(faults), "final": final_phase(run.config, end)},
        "stats": {k: short(v, 400) for k, v in stats.items()},
        "timings": results.get("timings") or {},
    }


def _started_at(config: dict[str, Any]) -> float | None:
    """The wall clock of the history's time 0 (``test.json``'s ``started_at``)."""
    value = config.get("started_at")
    return float(value) if isinstance(value, int | float) else None


def render_html(data: dict[str, Any]) -> str:
    blob = json.dumps(data, separators=(",", ":"), allow_nan=False, default=str)
    return _env.get_template("report.html.j2").render(
        d=data,
        blob=blob.replace("<", "\\u003c"),  # no markup can end or nest in the script
        css=_static(UPLOT / "uPlot.min.css", "report.css"),
        uplot=_static(UPLOT / "uPlot.iife.min.js"),  # its own script: report.js stays strict
        js=_static("plot.js", "linear.js", "report.js"),
    )


def _static(*names: str | Path) -> str:
    """The named files of ``reports/static``, joined, for inlining into a page."""
    return "\n".join((STATIC / name).read_text() for name in names)


def render_index(runs: list[dict[str, Any]], suites: list[dict[str, Any]], root: str) -> str:
    return _env.get_template("index.html.j2").render(
        runs=runs, suites=suites, root=root, css=_static("report.css")
    )


def _summary(pairs: Pairs) -> dict[str, Any]:
    by = Counter(zip(pairs.f.tolist(), pairs.type.tolist(), strict=True))
    return {
        "ops": len(pairs),
        "processes": len(set(pairs.process.tolist())),
        "by": [{"f": f, "type": t, "n": n} for (f, t), n in sorted(by.items())],
    }


def _first_series(stats: dict[str, Any], names: tuple[str, ...], scale: float) -> dict[str, Any]:
    """The first of the checker's ``names`` series it gave, its highest series
    only; ``omitted`` counts the others."""
    for name in names:
        if name in stats:
            series = stat_series(stats, name, scale)
            kept = highest(series)
            return {"stat": name, "series": kept, "omitted": len(series) - len(kept)}
    return {"stat": None, "series": [], "omitted": 0}


def _lag_summary(stats: dict[str, Any]) -> list[str]:
    """The checker's worst realtime lag, overall and per key and process, as lines."""
    lag: dict[str, Any] = next((stats[n] for n in LAG_STATS if isinstance(stats.get(n), dict)), {})
    out = []
    worst = lag.get("worst")
    if isinstance(worst, dict) and isinstance(worst.get("lag"), int | float):
        op = worst.get("op") or {}
        out.append(
            f"worst lag {worst['lag'] / 1e9:.3f} s, on key {worst.get('key')} "
            f"by op {op.get('index')} (process {op.get('process')})"
        )
    for field in ("by_key", "by_process"):
        worst_of = lag.get(field)
        if isinstance(worst_of, dict) and worst_of:
            top = sorted(worst_of.items(), key=lambda kv: -kv[1])[:10]
            out.append(f"worst {field[3:]}: " + ", ".join(f"{k} {v / 1e9:.3f} s" for k, v in top))
    return out


#: what a triage header shows of a test's settings, in this order
TRIAGE_SETTINGS = ("workload", "nemesis", "bug", "seed", "time_limit", "nodes", "cluster", "db")


def triage(config: dict[str, Any], end: float) -> dict[str, Any]:
    """What someone looking at a failure asks first: which test, which faults
    and bug modes, which seed, how long, which versions, the command that
    runs it again and where the run comes from; then every other setting,
    compactly."""
    spec = config.get("spec") if isinstance(config.get("spec"), dict) else {}
    facts = []
    for name in TRIAGE_SETTINGS:
        value = spec.get(name, config.get(name))
        if isinstance(value, list):
            value = ",".join(map(str, value)) or "none"
        if value is not None:
            facts.append([name.replace("_", " "), value])
    facts.append(["duration", f"{end:.1f} s"])
    broker = config.get("broker_settings")
    if isinstance(broker, dict):
        facts.append(["failover", failover(broker)])
    versions = config.get("versions") if isinstance(config.get("versions"), dict) else {}
    settings = [
        [k.replace("_", "-"), ",".join(map(str, v)) if isinstance(v, list) else v]
        for k, v in sorted(spec.items())
        if k not in TRIAGE_SETTINGS
    ]
    return {
        "facts": facts,
        "versions": sorted(versions.items()),
        "command": config.get("command"),
        "origin": origin(config.get("origin")),
        "settings": settings,
    }


def failover(settings: dict[str, Any]) -> str:
    """How soon the controller fences a broker, as the run's cluster was told."""
    session = settings.get("broker.session.timeout.ms", "9000")
    grace = int(settings.get("broker.session.disconnect.grace.ms", -1))
    if grace < 0:
        return f"after the broker session ({session} ms), also for a killed broker (as Kafka)"
    return f"after the broker session ({session} ms); {grace} ms after a broker's connections close"


ORIGINS = {
    "schedule": "Its faults come from the schedule file",
    "replay": "It replays the run",
    "shrink": "It is a step in shrinking the run",
}


def origin(recorded: Any) -> dict[str, str] | None:
    """Where the run comes from, as the header says it (None: a run of its own)."""
    if not isinstance(recorded, dict) or recorded.get("kind") not in ORIGINS:
        return None
    return {
        "text": ORIGINS[recorded["kind"]],
        "path": str(recorded.get("path", "")),
        "link": str(recorded.get("link", recorded.get("path", ""))),
    }


def _bounded(config: dict[str, Any]) -> Any:
    text = json.dumps(config, default=str)
    return config if len(text) <= MAX_CONFIG_CHARS else short(text, MAX_CONFIG_CHARS)
