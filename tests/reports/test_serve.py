"""``jepka serve`` as a real process answering on localhost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli import main
from reports.suite import Attempt, CaseOutcome, suite_index

pytestmark = pytest.mark.integration


@pytest.fixture
def served(make_run) -> Iterator[tuple[str, Path]]:
    bad = make_run(lose=True)
    make_run(lose=False, name="steady", stamp="20260102T000000")
    store = bad.parent.parent
    (store / "latest").symlink_to(bad)
    suite = store / "suites" / "nightly" / "20260103T000000"
    suite.mkdir(parents=True)
    cases = [
        CaseOutcome("a", {}, ["valid"], [Attempt("valid", str(bad))]),
        CaseOutcome("b", {}, ["valid"], [Attempt("invalid"), Attempt("valid")]),
    ]
    (suite / "index.html").write_text(suite_index("nightly", cases, suite))
    summary = [{"name": c.name, "status": c.status} for c in cases]
    (suite / "suite.json").write_text(json.dumps(summary))
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "serve", "--store", str(store), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("serving "), line
        yield line.split(" at ")[1].strip(), store
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()


def test_index_lists_runs_with_verdicts_and_counts(served) -> None:
    url, _ = served
    assert url.startswith("http://127.0.0.1:")
    page = get(url)
    assert page.count('<tr class="run">') == 2  # latest is a link, not a third run
    steady, queue = page.index("steady"), page.index("queue")
    assert steady < queue  # newest first
    assert "INVALID" in page and "VALID" in page
    assert "lost-write: 1" in page and "G1c-realtime: 1" in page and "G0: 1" in page
    cells = "<td>queue</td><td>partition</td><td>early-ack</td><td>7</td><td></td>"
    assert cells in page and 'id="filter"' in page
    assert page.count('<tr class="suite">') == 1
    assert '<a href="/suites/nightly/20260103T000000/index.html">nightly</a>' in page
    assert "pass: 1, flaky: 1" in page
    assert "jepka suite: nightly" in get(url + "suites/nightly/20260103T000000/index.html")


def test_reports_are_rendered_on_first_request(served) -> None:
    url, store = served
    run = store / "queue" / "20260101T000000"
    assert not (run / "report.html").exists()
    page = get(url + "queue/20260101T000000/report.html")
    assert "jepka report: queue" in page and (run / "report.html").is_file()
    assert '"valid"' in get(url + "latest/results.json")
    with pytest.raises(urllib.error.HTTPError) as e:
        get(url + "nope/report.html")
    assert e.value.code == 404


def test_serve_rejects_a_missing_store(tmp_path: Path, capsys) -> None:
    assert main(["serve", "--store", str(tmp_path / "none"), "--port", "0"]) == 254
    assert "no such store folder" in capsys.readouterr().err
