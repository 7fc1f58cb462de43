"""Each broker bug mode, run through `jepka test` with the workload and nemesis
that expose it, is reported invalid with its expected anomaly kind.

The table is the bug cases of the nightly matrix (``suites/nightly.yml``,
cases with ``bug:``): settings, seed and the ``anomalies`` an invalid verdict
must include, so CI and the nightly run exactly the same configurations.
For the bugs in ``REVERSE`` the same configuration also runs without the bug
and must end valid — proof that the bug, not the setup, broke the run — and
the two runs, sharing a seed, must have issued the same operations and the
same faults.

``make test`` runs the bugs in :data:`CHEAP` live; the other runs are marked
``acceptance`` (``make acceptance``, the nightly), and every run's recorded
history is checked offline in ``make test``
(``tests/checkers/test_recorded_histories.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cli import main
from harness.cli.suite import settings_only
from tests.corpus import BUG_CASES, CASES, REVERSE
from tests.harness.runs import history_ops
from tests.nemesis.probes import netns_available

END_TO_END = [
    pytest.mark.slow,
    pytest.mark.netns,
    pytest.mark.integration,
    pytest.mark.broker,
    pytest.mark.spark,
    pytest.mark.timeout(1800),  # a cluster run and its check, on a busy machine
]
# Live in `make test`: one node, no fault and 12 s of workload make this case
# and its run without the bug the cheapest by far (about 25 s each; the
# others take 3 nodes, a fault and 20-45 s of workload).
CHEAP = ("lso-off-by-one",)
RUNS: dict[tuple[str, bool], tuple[int, Path]] = {}


def run(bug: str, store: Path, *, with_bug: bool = True) -> tuple[int, Path]:
    """``jepka test --config`` of the bug's case (once per module); the exit
    code and the run folder."""
    if (bug, with_bug) in RUNS:
        return RUNS[bug, with_bug]
    reason = netns_available()
    if reason:
        pytest.skip(reason)
    settings = {**settings_only(CASES[bug]), "store": str(store)}
    if not with_bug:
        settings["bug"] = []
    config = store / f"{bug}-{with_bug}.yml"
    store.mkdir(parents=True, exist_ok=True)
    config.write_text(yaml.safe_dump(settings))
    code = main(["test", "--config", str(config)])
    RUNS[bug, with_bug] = code, (store / "latest").resolve()
    return RUNS[bug, with_bug]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bugs")


def results(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "results.json").read_text())


def test_the_table_covers_every_bug_mode() -> None:
    from broker.bugs import BUGS

    assert sorted(bug for bug, _, _ in BUG_CASES) == sorted(BUGS)
    for bug, settings, _ in BUG_CASES:
        assert settings["anomalies"] and settings["time_limit"] <= 45, bug
    assert sorted(CASES) == sorted(BUGS)


def live(bugs: Iterable[str]) -> list[Any]:
    """The bugs as parameters of a live test, marked ``acceptance`` unless cheap."""
    return [
        pytest.param(b, marks=END_TO_END + ([] if b in CHEAP else [pytest.mark.acceptance]))
        for b in bugs
    ]


@pytest.mark.parametrize("bug", live(sorted(CASES)))
def test_bug_is_reported_with_its_anomaly(bug: str, store: Path) -> None:
    code, run_dir = run(bug, store)
    found = results(run_dir)
    assert code == 1 and found["valid"] is False, found["stats"].get("anomaly_counts")
    assert set(CASES[bug]["anomalies"]) <= set(found["anomalies"]), sorted(found["anomalies"])


def schedule(run_dir: Path) -> tuple[list[Any], list[Any]]:
    """The main phase's client invocations (what, not who or when; the
    assignments of fresh processes and the final reads depend on outcomes)
    and the nemesis's invocations."""
    ops = history_ops(run_dir)
    invokes = [o for o in ops if o["type"] == "invoke"]
    client = [
        (o["f"], o["value"], o.get("abort"))
        for o in invokes
        if o["process"] != "nemesis"
        and o["f"] not in ("assign", "subscribe")
        and not o.get("final")
        and not o.get("poll_ms")
    ]
    faults = [(o["f"], o["value"]) for o in invokes if o["process"] == "nemesis"]
    return client, faults


@pytest.mark.parametrize("bug", live(REVERSE))
def test_without_the_bug_the_same_run_is_valid_and_issues_the_same_schedule(
    bug: str, store: Path
) -> None:
    code, clean = run(bug, store, with_bug=False)
    assert code == 0 and results(clean)["valid"] is True, results(clean)["anomalies"].keys()
    _, buggy = run(bug, store)
    a, b = schedule(buggy), schedule(clean)
    n = min(len(a[0]), len(b[0]))
    assert n > 50 and a[0][:n] == b[0][:n]
    assert a[1] == b[1]
