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
    from checkers import check
    from harness.cli.suite import run_case

    seed = {"seed": random.SystemRandom().randrange(1, 2**31)} if entry.random_seed else {}
    attempt = run_case(entry.case, {**entry.settings, **seed}, str(store))
    if attempt.run is None:
        return [f"crashed: {attempt.error}"]
    run = Path(attempt.run)
    if not (run / HISTORY).is_file():
        return [f"no {HISTORY} (run: {run})"]
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
    expectation = {**entry.describe(), **offline, **seed, "run_seconds": round(attempt.seconds, 1)}
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
    args = parser.parse_args(argv)
    chosen = selected(args.patterns)
    if not chosen:
        print(f"no case matches {' '.join(args.patterns)}", file=sys.stderr)
        return 2
    if args.list:
        print("\n".join(e.id for e in chosen))
        return 0
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
