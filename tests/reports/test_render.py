"""Rendering stored runs, the size bound, and ``jepka report``."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from harness.cli import main
from reports import RunError, write_report
from reports.anomalies import MAX_ROWS
from reports.render import LAG_STATS, STATIC, UNSEEN_STATS, UPLOT, _first_series, _lag_summary
from reports.series import MAX_SERIES
from tests.reports.conftest import HistoryBuilder

BLOB = re.compile(r'<script type="application/json" id="data">(.*?)</script>', re.S)


def blob(report: Path) -> dict:
    return json.loads(BLOB.search(report.read_text()).group(1))


def test_report_of_an_invalid_run(make_run) -> None:
    run = make_run(lose=True, nodes=True)
    written = write_report(run)
    page = written.report.read_text()
    assert "INVALID" in page and "lost-write" in page and "jepka-0/0" in page  # config shown
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)  # nothing remote
    assert not re.search(r"<(script|link|img)[^>]*\b(src|href)=", page)  # nothing external
    for vendored in ("uPlot.iife.min.js", "uPlot.min.css"):  # inlined as its package ships it
        assert (STATIC / UPLOT / vendored).read_text() in page
    data = blob(written.report)
    assert data["verdict"] is False
    assert [s["kind"] for s in data["sections"]] == [
        "G1c-realtime",
        "int-poll-skip",
        "lost-write",
        "unseen",
        "G0",
    ]
    assert data["orders"][0]["key"] == "0"
    assert [c["kind"] for c in data["cycles"]] == ["G1c-realtime", "G0"]
    lin = data["linear"]["keys"][0]
    assert (lin["key"], lin["label"], lin["cycles"], lin["checker_pairs"]) == (
        "3",
        "jepka-1/1",
        [0],
        1,
    )
    assert [e["class"] for e in data["nodes"]["events"]] == ["leader", "isr"]
    assert [f["kind"] for f in data["faults"]] == ["partition"]
    lanes = data["timeline"]["lanes"]
    assert [f["title"] for lane in lanes for f in lane["faults"]] == ["partition: n1 \u27c2 n2 n3"]
    assert data["timeline"]["final"] is None  # the history ends before the time limit
    assert len(data["table"]["f"]) == data["summary"]["ops"] == 14
    assert "<failure" in written.junit.read_text()


def test_the_header_says_what_triage_needs(make_run) -> None:
    written = write_report(make_run(lose=True))
    data = blob(written.report)
    facts = dict(data["triage"]["facts"])
    assert facts["workload"] == "queue" and facts["nemesis"] == "partition"
    assert facts["bug"] == "early-ack" and facts["seed"] == 7 and facts["time limit"] == 30.0
    assert facts["duration"].endswith(" s")
    assert data["triage"]["command"] == "jepka test --nemesis partition --bug early-ack --seed 7"
    assert data["triage"]["settings"] == [["acks", "all"], ["rate", 100.0]]
    page = written.report.read_text()
    assert 'id="rerun">jepka test --nemesis partition --bug early-ack --seed 7<' in page
    assert "librdkafka 2.16.0" in page


def test_the_header_links_to_where_the_run_comes_from(make_run) -> None:
    original = make_run(lose=True, stamp="20260101T000000")
    run = make_run(lose=True, stamp="20260101T000100")
    test = json.loads((run / "test.json").read_text())
    test["origin"] = {
        "kind": "replay",
        "path": str(original),
        "link": "../20260101T000000/report.html",
    }
    (run / "test.json").write_text(json.dumps(test))
    page = write_report(run).report.read_text()
    assert f'It replays the run <a href="../20260101T000000/report.html">{original}</a>' in page
    assert 'id="origin"' not in write_report(original).report.read_text()


def test_report_of_a_valid_run_has_checker_series(make_run) -> None:
    data = blob(write_report(make_run(lose=False)).report)
    assert data["verdict"] is True and data["nodes"]["present"] is False
    assert [s["name"] for s in data["unseen"]["series"]] == ["0", "2", "3", "4", "5"]
    assert (
        data["lag"] == {"stat": "realtime_lag", "series": [], "omitted": 0}
        and data["lag_summary"] == []
    )


def test_lag_from_the_checker_stats() -> None:
    stats = {
        "realtime_lag": {
            "worst": {"lag": 3_000_000_000, "key": 2, "op": {"index": 40, "process": "1"}},
            "by_key": {"2": 3_000_000_000, "0": 10**9},
            "by_process": {"1": 3_000_000_000},
            "series": [{"time": 5 * 10**9, "lag": 10**9}, {"time": 6 * 10**9, "lag": 3 * 10**9}],
        }
    }
    assert _first_series(stats, LAG_STATS, 1e-9) == {
        "stat": "realtime_lag",
        "series": [{"name": "lag", "x": [5.0, 6.0], "y": [1.0, 3.0]}],
        "omitted": 0,
    }
    per_key = {"unseen_series": [{"time": 0, "unseen": {str(k): k for k in range(40)}}]}
    unseen = _first_series(per_key, UNSEEN_STATS, 1.0)
    assert len(unseen["series"]) == MAX_SERIES and unseen["omitted"] == 40 - MAX_SERIES
    assert _lag_summary(stats) == [
        "worst lag 3.000 s, on key 2 by op 40 (process 1)",
        "worst key: 2 3.000 s, 0 1.000 s",
        "worst process: 1 3.000 s",
    ]


def test_results_pass_through_and_markup_in_values_is_inert(tmp_path: Path) -> None:
    h = HistoryBuilder()
    h.op(0, "invoke", "send", [["send", 0, 1]])
    h.op(0, "info", "send", [["send", 0, 1]], error="</script><script>alert(1)</script>")
    h.write(tmp_path / "history.jsonl")
    results = {"valid": "unknown", "anomalies": {}, "error": "<b>timeout</b>"}
    written = write_report(tmp_path, results)
    assert json.loads(written.results.read_text()) == results
    page = written.report.read_text()
    assert "<script>alert(1)" not in page and "<b>timeout</b>" not in page
    assert html.escape("<b>timeout</b>") in page
    assert blob(written.report)["table"]["error"] == ["</script><script>alert(1)</script>"]


def test_a_long_history_gives_a_bounded_page(tmp_path: Path) -> None:
    h = HistoryBuilder()
    n = MAX_ROWS + 5000
    for i in range(n):
        h.op(i % 8, "invoke", "send", [["send", i % 4, i]], dt_ms=0.01)
        h.op(i % 8, "ok", "send", [["send", i % 4, [i // 4, i]]], dt_ms=0.01)
    h.write(tmp_path / "history.jsonl")
    late = 2 * (n - 10) + 1
    results = {
        "valid": False,
        "anomalies": {
            "duplicate": [
                {
                    "key": 1,
                    "value": 7,
                    "offsets": [1, 4000],
                    "writer": {"index": late, "process": 2},
                }
            ]
        },
    }
    written = write_report(tmp_path, results)
    data = blob(written.report)
    assert data["summary"]["ops"] == n and len(data["table"]["f"]) == MAX_ROWS
    assert late in data["table"]["complete"]  # the op the anomaly names is embedded
    assert all(len(s["x"]) <= 2000 for s in data["latency_raw"])
    assert written.report.stat().st_size < 10_000_000


def test_missing_results_and_bad_history_are_reported(tmp_path: Path, make_run) -> None:
    with pytest.raises(RunError, match=r"no results\.json"):
        write_report(tmp_path)
    run = make_run(lose=True)
    with (run / "history.jsonl").open("a") as f:
        f.write('{"index": 99, "time": 1, "type": "bogus"}\n{}\n')
    with pytest.raises(RunError, match=r"history.jsonl:\d+: .*"):
        write_report(run)


def test_jepka_report_exit_codes(make_run, tmp_path: Path, capsys) -> None:
    assert main(["report", str(make_run(lose=True))]) == 1
    assert main(["report", str(make_run(lose=False, name="ok"))]) == 0
    out = capsys.readouterr().out
    assert out.count("report.html") == 2 and "junit.xml" in out
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["report", str(empty)]) == 254
    err = capsys.readouterr().err
    assert (
        err.strip() == f"jepka report: {empty}/results.json: no results.json; run `jepka "
        "check` first"
    )
    (empty / "results.json").write_text("{not json")
    assert main(["report", str(empty)]) == 254
    assert "unreadable JSON" in capsys.readouterr().err


def test_the_header_says_how_soon_brokers_are_fenced(make_run) -> None:
    run = make_run(lose=True)
    test = json.loads((run / "test.json").read_text())
    test["broker_settings"] = {"broker.session.disconnect.grace.ms": "1500"}
    (run / "test.json").write_text(json.dumps(test))
    facts = dict(blob(write_report(run).report)["triage"]["facts"])
    assert facts["failover"] == (
        "after the broker session (9000 ms); 1500 ms after a broker's connections close"
    )
    test["broker_settings"] = {"broker.session.timeout.ms": "3000"}
    (run / "test.json").write_text(json.dumps(test))
    facts = dict(blob(write_report(run).report)["triage"]["facts"])
    assert facts["failover"] == (
        "after the broker session (3000 ms), also for a killed broker (as Kafka)"
    )
