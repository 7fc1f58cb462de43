"""Re-records the checker's history corpus (``tests/data/histories/``) from live runs.

Each selected case (``tests/corpus.py`` lists them) runs once through the
suite runner (``jepka suite``'s ``run_case``); its ``history.parquet`` is then
checked offline, as ``tests/checkers/test_recorded_histories.py`` checks it.
The recording is kept only if the live and the offline check agree and the
verdict (and, for an invalid one, the required kinds) is what the case
expects; otherwise the old recording stays, the case and what differed are
printed, and the exit code is 1 (``--tries N`` runs a case up to N times
first: the detection table's cases draw a new seed each run and find a bug
mode on some seeds only). Needs root (network namespaces), like
``jepka test``; one cluster runs at a time.

    .venv/bin/python scripts/record_histories.py [PATTERN ...] [--list] [--tries N] [--store DIR]
    .venv/bin/python scripts/record_histories.py CASE --from RUN

``--from RUN`` keeps a stored run of the one case selected instead of a new
run, once its settings and seed are shown to be the case's: a detection
case whose bug mode a random seed finds seldom is recorded from the
detection run that found it.

A PATTERN (shell-style) selects cases by id (``SUITE/CASE``) or case name,
e.g. ``'nightly/bug-no-dedup*'`` or ``'*group*kill*'``; none selects all.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import random
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.corpus import (  # noqa: E402
    EXPECTATION,
    HISTORY,
    Entry,
    against_case,
    against_recording,
    corpus_bytes,
    entries,
    outcome,
)


def selected(patterns: list[str]) -> list[Entry]:
    """The entries a pattern matches by id or case name (all without patterns)."""
    return [
        e
        for e in entries()
        if not patterns or any(fnmatch.fnmatch(n, p) for p in patterns for n in (e.id, e.case))
    ]


def replace(path: Path, write: Any) -> None:
    """Writes ``path`` through a temporary file, so a failed write keeps the old one."""
    tmp = path.with_name(f".{path.name}.tmp")
    write(tmp)
    os.replace(tmp, path)


def record(entry: Entry, store: Path) -> list[str]:
    """Runs the entry's case and keeps its history if it checks as expected;
    the problems that kept it out otherwise."""
    from harness.cli.suite import run_case

    seed = {"seed": random.SystemRandom().randrange(1, 2**31)} if entry.random_seed else {}
    attempt = run_case(entry.case, {**entry.settings, **seed}, str(store))
    if attempt.run is None:
        return [f"crashed: {attempt.error}"]
    return keep(entry, Path(attempt.run), {**seed, "run_seconds": round(attempt.seconds, 1)})


def record_stored(entry: Entry, run: Path) -> list[str]:
    """Keeps a run made before (by ``jepka detect``, say) as the entry's
    recording, if it is a run of the entry's case, on the seed it names, and
    checks as expected: a bug mode that a random seed finds seldom gets a
    recording of the run that found it."""
    from harness.cli.suite import settings_only
    from harness.spec import resolve

    try:
        test = json.loads((run / "test.json").read_text())
        seed, made, status = int(test["seed"]), dict(test["spec"]), test.get("status")
    except (OSError, ValueError, KeyError, TypeError) as e:
        return [f"{run}: not a stored run ({type(e).__name__}: {e})"]
    if status != "completed":
        return [f"{run}: the run did not complete (status {status!r})"]
    settings = {**entry.settings, "seed": seed} if entry.random_seed else entry.settings
    want = resolve(settings_only(settings), {"name": "", "store": ""}, entry.case).to_dict()
    ignored = ("name", "store")
    differ = sorted(
        k
        for k in set(want) | set(made)
        if k not in ignored and json.dumps(want.get(k)) != json.dumps(made.get(k))
    )
    if differ:
        return [f"{run} is not a run of {entry.id}: its {', '.join(differ)} differ"]
    more = {"seed": seed} if entry.random_seed else {}
    return keep(entry, run, {**more, "recorded_from": f"{run.parent.name}/{run.name}"})


def keep(entry: Entry, run: Path, more: dict[str, Any]) -> list[str]:
    """Keeps ``run``'s history as the entry's recording, with ``more`` in its
    expectation, if its live and offline checks agree and meet the case."""
    from checkers import check

    for needed in (HISTORY, "results.json"):
        if not (run / needed).is_file():
            return [f"no {needed} (run: {run})"]
    live = outcome(json.loads((run / "results.json").read_text()))
    offline = outcome(check(str(run / HISTORY)))
    problems = [f"{p} (run: {run})" for p in against_case(entry, live)]
    problems += [
        f"the stored Parquet checks otherwise than the live run: {p} (run: {run})"
        for p in against_recording(live, offline)
    ]
    if problems:
        return problems
    entry.path.mkdir(parents=True, exist_ok=True)
    replace(entry.path / HISTORY, lambda tmp: shutil.copyfile(run / HISTORY, tmp))
    expectation = {**entry.describe(), **offline, **more}
    replace(
        entry.path / EXPECTATION,
        lambda tmp: tmp.write_text(json.dumps(expectation, indent=2, sort_keys=True) + "\n"),
    )
    return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("patterns", nargs="*", metavar="PATTERN", help="cases to re-record")
    parser.add_argument("--list", action="store_true", help="print the selected cases only")
    parser.add_argument(
        "--tries", type=int, default=1, metavar="N", help="runs per case until one is kept"
    )
    parser.add_argument(
        "--store", type=Path, default=ROOT / "store" / "record", help="where the runs go"
    )
    parser.add_argument(
        "--from",
        dest="stored",
        type=Path,
        metavar="RUN",
        help="keep this stored run of the one case selected instead of running it",
    )
    args = parser.parse_args(argv)
    chosen = selected(args.patterns)
    if not chosen:
        print(f"no case matches {' '.join(args.patterns)}", file=sys.stderr)
        return 2
    if args.list:
        print("\n".join(e.id for e in chosen))
        return 0
    if args.stored is not None:
        if len(chosen) != 1:
            print(f"--from: select one case, not {len(chosen)}", file=sys.stderr)
            return 2
        problems = record_stored(chosen[0], args.stored)
        print(f"{chosen[0].id}: {'REFUSED: ' + '; '.join(problems) if problems else 'kept'}")
        return 1 if problems else 0
    refused: dict[str, list[str]] = {}
    for i, entry in enumerate(chosen, 1):
        print(f"record {i}/{len(chosen)}: {entry.id}", flush=True)
        for attempt in range(1, max(args.tries, 1) + 1):
            problems = record(entry, args.store)
            if not problems or attempt >= args.tries:
                break
            print(f"  run {attempt} refused: {'; '.join(problems)}", flush=True)
        if problems:
            refused[entry.id] = problems
        print(f"  {'REFUSED: ' + '; '.join(problems) if problems else 'kept'}", flush=True)
    print(
        f"recorded {len(chosen) - len(refused)} of {len(chosen)}; "
        f"corpus {corpus_bytes() / 2**20:.1f} MB"
    )
    for case, problems in refused.items():
        print(f"kept the old recording of {case}: {'; '.join(problems)}")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
