"""The detection table: how often each bug mode is found, and how often the
correct broker is falsely accused, under seeds drawn at random.

A detection file (``suites/detect.yml``) holds the settings every run shares
(the standard fault mix), one invocation per bug mode with the anomaly
kinds that finding it means (and any setting the bug needs to exist, such
as the acks its producers use), and the workloads the correct broker runs
(with such settings too, so that each is also run without a bug). Each run
draws its seed at run time and appends one JSON line to a results file, so
runs made at different times add up; the table is computed from that file
alone, from the lines of the invocations as the detection file has them
now (each line carries a hash of its settings), each judged by the kinds
the file names now.
"""

from __future__ import annotations

import hashlib
import json
import random
import statistics
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from checkers.result import anomaly_counts
from harness.reproduce import anomaly_kinds, op_times
from harness.runner import RunResult, run_test
from harness.spec import SpecError, TestSpec, resolve
from nemesis.plan import PlanError, read_yaml

CORRECT = "correct"


@dataclass(frozen=True)
class Invocation:
    """One line of the table: a bug mode (or the correct broker) on a workload."""

    name: str
    settings: dict[str, Any]
    #: the kinds whose report counts as finding the bug; () for the correct broker
    anomalies: tuple[str, ...] = ()

    def config(self, overrides: Mapping[str, Any] | None = None) -> str:
        """A short hash of the settings and the overrides that change the
        test (not where it is stored): lines of another configuration of
        the same invocation are kept apart."""
        changes = {k: v for k, v in (overrides or {}).items() if v is not None and k != "store"}
        text = json.dumps({**self.settings, **changes}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    @property
    def bug(self) -> str:
        return self.settings["bug"][0] if self.settings.get("bug") else CORRECT

    def spec(self, seed: int, overrides: Mapping[str, Any]) -> TestSpec:
        return resolve({**self.settings, "seed": seed}, overrides, self.name)


def load(path: Path) -> list[Invocation]:
    """The invocations of a detection file; SpecError names what is wrong."""
    try:
        doc = read_yaml(path)
    except PlanError as e:
        raise SpecError(str(e)) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("bugs"), list):
        raise SpecError(f"{path}: expected a mapping with `settings`, `bugs` and `correct`")
    base = dict(doc.get("settings") or {})
    out = []
    for i, entry in enumerate(doc["bugs"], 1):
        if not isinstance(entry, dict) or not {"bug", "workload", "anomalies"} <= set(entry):
            raise SpecError(f"{path}: bugs[{i}]: needs bug, workload and anomalies")
        own = {k: v for k, v in entry.items() if k not in ("bug", "anomalies")}
        kinds = entry["anomalies"]
        if not isinstance(kinds, list) or not kinds or not all(isinstance(k, str) for k in kinds):
            raise SpecError(f"{path}: bugs[{i}]: anomalies must be a list of anomaly kinds")
        settings = {**base, **own, "bug": [entry["bug"]]}
        out.append(Invocation(str(entry["bug"]), settings, tuple(kinds)))
    for i, entry in enumerate(doc.get("correct") or [], 1):
        own = dict(entry) if isinstance(entry, dict) else {"workload": entry}
        if "workload" not in own:
            raise SpecError(f"{path}: correct[{i}]: needs a workload")
        name = own.pop("name", own["workload"])
        out.append(Invocation(f"{CORRECT}-{name}", {**base, **own}, ()))
    for inv in out:  # every invocation must resolve before anything runs
        inv.spec(1, {})
    return out


def select(invocations: list[Invocation], names: Iterable[str]) -> list[Invocation]:
    """The invocations named, in file order; SpecError for an unknown name."""
    wanted = {n.strip() for n in names if n.strip()}
    unknown = wanted - {i.name for i in invocations}
    if unknown:
        known = ", ".join(i.name for i in invocations)
        raise SpecError(f"--only: unknown {', '.join(sorted(unknown))}; known: {known}")
    return [i for i in invocations if i.name in wanted]


def outcome(line: Mapping[str, Any]) -> str:
    """One run's result in a word: found or missed for a bug mode, valid or
    a false alarm for the correct broker."""
    if line.get("detected") is not None:
        return "found" if line["detected"] else "missed"
    return {True: "valid", False: "FALSE ALARM", "crashed": "crashed"}.get(line["valid"], "unknown")


def first_time(instances: Iterable[Any]) -> float | None:
    """The earliest op time (s) any instance names: when the anomaly began."""
    times = op_times(list(instances))
    return round(min(times) / 1e9, 1) if times else None


def _head(inv: Invocation, seed: int, seconds: float, config: str) -> dict[str, Any]:
    """What every results-file line says: which run, when, how long."""
    return {
        "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "name": inv.name,
        "config": config,
        "bug": inv.bug,
        "workload": inv.settings["workload"],
        "seed": seed,
        "seconds": round(seconds, 1),
    }


def summary(
    inv: Invocation, seed: int, result: RunResult, seconds: float, config: str
) -> dict[str, Any]:
    """The results-file line of one run."""
    results = result.results
    kinds = sorted(anomaly_kinds(results))
    line: dict[str, Any] = {
        **_head(inv, seed, seconds, config),
        "valid": results.get("valid"),
        "kinds": kinds,
        "counts": {k: n for k, n in anomaly_counts(results).items() if k in kinds},
        "run": str(result.run_dir.path),
    }
    if inv.anomalies:
        line["anomalies"] = list(inv.anomalies)
        line["detected"] = bool(set(inv.anomalies) & set(kinds))
        found = results.get("anomalies") or {}
        line["first_s"] = first_time([x for k in inv.anomalies for x in found.get(k) or []])
    return line


def run_rounds(
    invocations: list[Invocation],
    rounds: int,
    results: Path,
    *,
    seed: int | None = None,
    overrides: Mapping[str, Any] | None = None,
    deadline: float | None = None,
    run_one: Callable[[TestSpec], RunResult] = run_test,
) -> Iterator[dict[str, Any]]:
    """Runs every invocation ``rounds`` times, round by round, each on a seed
    drawn now (or ``seed``), appending each run's line to ``results``;
    stops before a run that would start after ``deadline`` (monotonic), and
    after a run Ctrl-C cut short (which is not recorded). A run that
    crashes is recorded as such, with its error, and the rounds go on."""
    draw = random.SystemRandom()
    results.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(rounds):
        for inv in invocations:
            if deadline is not None and time.monotonic() >= deadline:
                return
            s = seed if seed is not None else draw.randrange(1, 2**31)
            started = time.monotonic()
            config = inv.config(overrides)
            try:
                result = run_one(inv.spec(s, overrides or {}))
            except Exception as e:  # a crashed run is a result to see, not a stop
                line = crashed(inv, s, time.monotonic() - started, config, e)
            else:
                if result.outcome is not None and result.outcome.interrupted:
                    return
                line = summary(inv, s, result, time.monotonic() - started, config)
            with results.open("a") as f:
                f.write(json.dumps(line, sort_keys=True) + "\n")
            yield line


def crashed(
    inv: Invocation, seed: int, seconds: float, config: str, error: Exception
) -> dict[str, Any]:
    """The results-file line of a run that raised instead of ending."""
    return {
        **_head(inv, seed, seconds, config),
        "valid": "crashed",
        "kinds": [],
        "error": f"{type(error).__name__}: {error}",
    }


LINE_KEYS = ("at", "bug", "workload", "valid", "kinds")


def read_results(path: Path) -> list[dict[str, Any]]:
    """Every line of a results file; a torn last line (a run killed while
    appending) is skipped, any other bad line named."""
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    out = []
    for n, text in enumerate(lines, 1):
        try:
            line = json.loads(text)
        except ValueError:
            if n == len(lines):
                break
            raise SpecError(f"{path}: line {n}: not JSON") from None
        if not isinstance(line, dict) or not all(k in line for k in LINE_KEYS):
            raise SpecError(f"{path}: line {n}: not a run's line ({', '.join(LINE_KEYS)})")
        try:
            utc(str(line["at"]))
        except ValueError:
            raise SpecError(f"{path}: line {n}: 'at' is not a time: {line['at']!r}") from None
        out.append(line)
    return out


def utc(text: str) -> datetime:
    """An ISO time as naive UTC (a time without an offset is taken as UTC)."""
    when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if when.tzinfo is not None:
        when = when.astimezone(UTC).replace(tzinfo=None)
    return when


def table(
    lines: list[dict[str, Any]], judged: Mapping[str, tuple[str, ...]] | None = None
) -> tuple[list[list[str]], list[list[str]]]:
    """The two tables: per bug mode (runs, found, rate, kinds seen, median
    time to the first anomaly) and per workload on the correct broker (runs,
    false alarms, and their kinds). With ``judged`` (each configuration of
    the detection file as it is now, and the kinds that count as finding its
    bug), only those configurations' lines count, and each is judged by the
    kinds its run saw against the kinds named now, so a bug mode's kinds can
    change without its older runs telling another story; without it, each
    line is judged as it was when written. A line's time to the first
    anomaly is of the kinds named when it was written."""
    bugs: dict[str, list[dict[str, Any]]] = {}
    correct: dict[str, list[dict[str, Any]]] = {}
    for line in of_configs(lines, judged):
        if line["valid"] == "crashed":  # no verdict: counted apart (crashes())
            continue
        if judged is not None and line["bug"] != CORRECT:
            anomalies = judged[line["config"]]
            detected = bool(set(anomalies) & set(line["kinds"]))
            line = {**line, "anomalies": list(anomalies), "detected": detected}
        into = correct if line["bug"] == CORRECT else bugs
        if line["bug"] == CORRECT:  # by its name in the file: the workload, or its own
            key = line.get("name", f"{CORRECT}-{line['workload']}").removeprefix(f"{CORRECT}-")
        else:
            key = line["bug"]
        into.setdefault(key, []).append(line)
    bug_rows = []
    for bug, got in sorted(bugs.items()):
        found = [x for x in got if x.get("detected")]
        seen: dict[str, int] = {}
        for x in got:
            for kind in x["kinds"]:
                seen[kind] = seen.get(kind, 0) + 1
        firsts = [x["first_s"] for x in found if x.get("first_s") is not None]
        bug_rows.append(
            [
                bug,
                got[0]["workload"],
                " or ".join(got[0].get("anomalies", [])),
                f"{len(found)} of {len(got)}",
                f"{len(found) / len(got):.0%}",
                ", ".join(f"{k} {n}" for k, n in sorted(seen.items())) or "none",
                f"{statistics.median(firsts):.1f} s" if firsts else "-",
            ]
        )
    correct_rows = []
    for workload, got in sorted(correct.items()):
        alarms = [x for x in got if x["valid"] is False]
        unknown = [x for x in got if x["valid"] not in (True, False)]
        kinds = sorted({k for x in alarms for k in x["kinds"]})
        correct_rows.append(
            [
                workload,
                str(len(got)),
                str(len(alarms)),
                str(len(unknown)),
                ", ".join(kinds) or "none",
            ]
        )
    return bug_rows, correct_rows


def of_configs(lines: list[dict[str, Any]], configs: Iterable[str] | None) -> list[dict[str, Any]]:
    """The lines of the settings ``configs`` (all of them when None)."""
    if configs is None:
        return lines
    kept = set(configs)
    return [x for x in lines if x.get("config") in kept]


def crashes(lines: list[dict[str, Any]], configs: Iterable[str] | None = None) -> int:
    """How many runs crashed (no verdict), of ``configs`` when given."""
    return sum(1 for x in of_configs(lines, configs) if x["valid"] == "crashed")


BUG_HEADER = [
    "bug mode",
    "workload",
    "finding it",
    "found",
    "rate",
    "kinds seen (runs)",
    "median first",
]
CORRECT_HEADER = ["workload", "runs", "false alarms", "unknown", "their kinds"]


def markdown(rows: list[list[str]], header: list[str]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(out)
