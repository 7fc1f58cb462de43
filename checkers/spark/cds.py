"""Dumps the class-data-sharing archive Spark's JVM starts from
(:data:`checkers.spark.session.CDS_ARCHIVE`), unless it exists.

A fresh JVM checks a synthetic history big enough to take the paths a real
check takes (code generation, adaptive shuffles, the per-key Python
workers); at exit it writes every class it loaded. ``make setup`` runs this
once per environment:

    .venv/bin/python -m checkers.spark.cds
"""

from __future__ import annotations

import os
import subprocess
import sys

from checkers.spark.session import CDS_ARCHIVE, CDS_DUMP_ENV

# Past tune_for_size's small-history threshold, so the big-history settings
# (generated code, adaptive execution) load their classes too.
OPS = 80_000


def _check_once() -> None:
    from checkers.analyze import check
    from checkers.synth import generate
    from history.flatten import flatten

    check(flatten(generate(1, OPS)))


def main() -> int:
    if CDS_ARCHIVE.is_file():
        print(f"class-data-sharing archive: {CDS_ARCHIVE} (exists)")
        return 0
    CDS_ARCHIVE.parent.mkdir(parents=True, exist_ok=True)
    partial = CDS_ARCHIVE.with_suffix(f".{os.getpid()}.tmp")
    # A child process: the JVM writes the archive when it exits, which is
    # when the Python process that started it ends.
    done = subprocess.run(
        [sys.executable, "-c", "from checkers.spark.cds import _check_once; _check_once()"],
        env={**os.environ, CDS_DUMP_ENV: str(partial)},
        capture_output=True,
        text=True,
    )
    if done.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        print(f"no class-data-sharing archive (Spark starts slower):\n{done.stderr[-2000:]}")
        return 0  # an optimisation: setup goes on without it
    partial.replace(CDS_ARCHIVE)
    print(f"class-data-sharing archive: {CDS_ARCHIVE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
