"""``jepka suite MATRIX.yml``: runs a matrix of tests and says which verdicts were unexpected.

The matrix file (YAML)::

    name: nightly                 # the suite's name (default: the file's stem)
    base: {time_limit: 60}        # settings every case shares (as in `jepka test`)
    matrix:                       # every combination becomes one case
      workload: [queue, txn]
      nemesis: [none, partition, "kill,pause"]
      seed: [1, 2]
    expect: valid                 # matrix cases' expected verdict(s) (default: valid)
    cases:                        # extra cases, e.g. broker bugs that must be detected
      - {name: lost-acks, bug: [SOME-BUG], nemesis: kill, seed: 1, expect: invalid,
         anomalies: [lost-write]}   # kinds an invalid verdict must include

Each case runs ``--repeat`` times on the same seed. A case is *pass* when
every attempt's verdict was expected, *fail* when none was, and *flaky* when
the attempts disagree; flaky cases are reported as such, never retried away.
Writes ``index.html``, ``junit.xml`` and ``suite.json`` under
``STORE/suites/<name>/<time>/``; exits 0 when every case passed, 1 otherwise,
254 for a bad matrix (checked whole before anything runs). Stopped by Ctrl-C,
SIGTERM or SIGHUP, it lets the running case heal and tear down, writes the
same files with that case and those after it as not run (a case stopped
between its repeats as stopped, with the attempts it ran), and exits as the
stop asks.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cli import ExitCode, UsageError, describe

if TYPE_CHECKING:
    from reports.suite import CaseOutcome

VERDICTS = ("valid", "invalid", "unknown", "crashed")
VERDICT_OF: dict[Any, str] = {True: "valid", False: "invalid"}


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "suite",
        help="run a matrix of tests; flag unexpected verdicts",
        description=describe(__doc__),
    )
    p.add_argument("matrix", type=Path, metavar="MATRIX.yml", help="the matrix file")
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="runs per case on the same seed (default 1)",
    )
    p.add_argument(
        "--store",
        type=Path,
        default=None,
        help="run directory root (default: the matrix's base store, else store)",
    )
    p.set_defaults(run=run)


def load_matrix(path: Path) -> tuple[str, list[tuple[str, dict[str, Any], list[str]]]]:
    """The suite's name and its cases as ``(name, settings, expected verdicts)``."""
    from harness.spec import SpecError, load_config, resolve

    try:
        doc = load_config(path)
    except SpecError as e:
        raise UsageError(str(e)) from None
    unknown = set(doc) - {"name", "base", "matrix", "expect", "cases"}
    if unknown:
        raise UsageError(f"{path}: unknown field(s) {', '.join(sorted(unknown))}")
    base = _anchored(_mapping(doc.get("base") or {}, f"{path}: base"), path)
    axes = _mapping(doc.get("matrix") or {}, f"{path}: matrix")
    cases: list[tuple[str, dict[str, Any], list[str]]] = []
    keys = list(axes)
    values = [v if isinstance(v, list) else [v] for v in axes.values()]
    expect = _expect(doc.get("expect", "valid"), f"{path}: expect")
    if keys:
        for combo in itertools.product(*values):
            settings = dict(zip(keys, combo, strict=True))
            cases.append((_case_name(settings), _anchored(settings, path), expect))
    extra = doc.get("cases") or []
    if not isinstance(extra, list):
        raise UsageError(f"{path}: cases must be a list")
    for i, raw in enumerate(extra, 1):
        settings = _mapping(raw, f"{path}: cases[{i}]")
        want = _expect(settings.pop("expect", "invalid"), f"{path}: cases[{i}].expect")
        name = str(settings.pop("name", "") or _case_name(settings))
        cases.append((name, _anchored(settings, path), want))
    if not cases:
        raise UsageError(f"{path}: no cases (give a matrix or cases)")
    names = [c[0] for c in cases]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UsageError(f"{path}: case names repeat: {', '.join(dup)}")
    for name, settings, _ in cases:  # every case must resolve before any runs
        _anomalies(settings, f"{path} case {name}")
        try:
            resolve({**base, **settings_only(settings)}, None, f"{path} case {name}")
        except SpecError as e:
            raise UsageError(str(e)) from None
    return str(doc.get("name") or path.stem), [(n, {**base, **s}, e) for n, s, e in cases]


def _anchored(settings: dict[str, Any], suite: Path) -> dict[str, Any]:
    """A case's schedule file, named relative to its suite file, as an absolute
    path: the suite runs the same from any directory."""
    schedule = settings.get("schedule")
    if isinstance(schedule, str) and schedule and not Path(schedule).is_absolute():
        return {**settings, "schedule": str((suite.parent / schedule).resolve())}
    return settings


def _mapping(v: Any, where: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise UsageError(f"{where}: expected a mapping, got {type(v).__name__}")
    return {str(k).replace("-", "_"): x for k, x in v.items()}


def _expect(v: Any, where: str) -> list[str]:
    items = v if isinstance(v, list) else [v]
    out = [VERDICT_OF[x] if isinstance(x, bool) else str(x) for x in items]
    bad = [x for x in out if x not in VERDICTS]
    if bad or not out:
        raise UsageError(f"{where}: {bad or v!r} is not one of {', '.join(VERDICTS)}")
    return out


def settings_only(case: dict[str, Any]) -> dict[str, Any]:
    """A case's ``jepka test`` settings: without ``anomalies``, the kinds its
    invalid verdict must include."""
    return {k: v for k, v in case.items() if k != "anomalies"}


def _anomalies(case: dict[str, Any], where: str) -> list[str]:
    kinds = case.get("anomalies", [])
    if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
        raise UsageError(f"{where}: anomalies must be a list of anomaly kinds, got {kinds!r}")
    return kinds


def _case_name(settings: dict[str, Any]) -> str:
    def show(v: Any) -> str:
        return "+".join(map(str, v)) if isinstance(v, list) else str(v).replace(",", "+")

    return "-".join(f"{k}={show(v)}" for k, v in settings.items()).replace("/", "_")


def run_case(name: str, settings: dict[str, Any], store: str | None) -> Any:
    """Runs one attempt of a case with ``jepka test``'s runner, in a process of
    its own (``harness.isolated``): client threads a stuck librdkafka call
    keeps alive end with it, not in the next case."""
    from harness.isolated import NoAnswer, call_isolated
    from reports.suite import Attempt

    t0 = time.monotonic()
    try:
        return call_isolated(_attempt, name, settings, store)
    except NoAnswer as e:
        return Attempt("crashed", error=f"the case ended badly: {e}", seconds=time.monotonic() - t0)


def _attempt(name: str, settings: dict[str, Any], store: str | None) -> Any:
    from checkers.result import anomaly_counts
    from harness.runner import run_test
    from harness.spec import resolve
    from reports.suite import Attempt

    overrides = {"name": name, "store": store}
    t0 = time.monotonic()
    try:
        result = run_test(resolve(settings_only(settings), overrides, name))
    except Exception as e:  # a crashed run is a verdict the suite reports, not a stop
        return Attempt("crashed", error=f"{type(e).__name__}: {e}", seconds=time.monotonic() - t0)
    results = result.results
    verdict = VERDICT_OF.get(results.get("valid"), "unknown")
    counts = anomaly_counts(results)
    error = results.get("error")
    missing = [k for k in _anomalies(settings, name) if k not in counts]
    if verdict == "invalid" and missing:  # invalid for another reason: not what was expected
        verdict, error = "unknown", f"invalid, but without {', '.join(missing)}"
    return Attempt(verdict, str(result.run_dir.path), counts, error, time.monotonic() - t0)


def run(args: argparse.Namespace) -> int:
    from harness.stopping import stop_signals_exit
    from reports.suite import CaseOutcome, finished

    if args.repeat < 1:
        raise UsageError(f"--repeat {args.repeat}: must be at least 1")
    name, cases = load_matrix(args.matrix)
    store = str(args.store) if args.store else None
    root = Path(store or cases[0][1].get("store") or "store")
    outcomes: list[CaseOutcome] = []
    # a SIGTERM between cases stops the suite as one within a case does, and
    # one more while the outputs of a stopped suite are written is ignored
    with stop_signals_exit():
        try:
            run_cases(name, cases, store, args.repeat, outcomes)
        except (KeyboardInterrupt, SystemExit):
            outcomes += [
                CaseOutcome(n, s, e, repeat=args.repeat) for n, s, e in cases[len(outcomes) :]
            ]
            out = write_outputs(root, name, outcomes)
            print(
                f"suite {name}: stopped after {finished(outcomes)} of {len(cases)} cases\n"
                f"{out / 'index.html'}",
                flush=True,
            )
            raise
    out = write_outputs(root, name, outcomes)
    bad = [o for o in outcomes if o.status != "pass"]
    print(
        f"suite {name}: {len(outcomes) - len(bad)} as expected, "
        f"{sum(o.status == 'flaky' for o in bad)} flaky, "
        f"{sum(o.status == 'fail' for o in bad)} unexpected\n{out / 'index.html'}"
    )
    return ExitCode.INVALID if bad else ExitCode.VALID


def run_cases(
    name: str,
    cases: list[tuple[str, dict[str, Any], list[str]]],
    store: str | None,
    repeat: int,
    outcomes: list[CaseOutcome],
) -> None:
    """Runs every case ``repeat`` times, adding each case's outcome to
    ``outcomes`` before its first attempt, so that a suite stopped half-way
    still reports every attempt that ran."""
    from reports.suite import CaseOutcome

    for case_name, settings, expect in cases:
        outcome = CaseOutcome(case_name, settings, expect, repeat=repeat)
        outcomes.append(outcome)
        for i in range(repeat):
            print(f"suite {name}: {case_name} ({i + 1}/{repeat})", flush=True)
            outcome.attempts.append(run_case(case_name, settings, store))
        print(f"  {outcome.status}: {', '.join(a.verdict for a in outcome.attempts)}", flush=True)


def write_outputs(root: Path, name: str, outcomes: list[CaseOutcome]) -> Path:
    """Writes the index, JUnit file and summary of ``outcomes`` under
    ``root/suites/<name>/<time>/``."""
    from reports.suite import suite_index, suite_junit

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    out = root / "suites" / name / stamp
    out.mkdir(parents=True, exist_ok=True)
    (out / "index.html").write_text(suite_index(name, outcomes, out))
    (out / "junit.xml").write_text(suite_junit(name, outcomes))
    summary = [{**asdict(o), "status": o.status} for o in outcomes]
    (out / "suite.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    return out
