"""The report in a real headless Chromium: it draws without a console error and
shows the verdict, the anomaly sections and the plots. Screenshots are kept in
``store/artifacts/`` for a person (or CI's artifact upload) to look at."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from checkers import check
from checkers.result import anomaly_counts
from reports import write_report
from reports.series import BUCKETS
from tests.eventually import eventually
from tests.reports.cdp import CHROMIUM, Chromium
from tests.reports.conftest import HistoryBuilder, queue_history

pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(not shutil.which(CHROMIUM), reason="chromium not installed"),
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "store" / "artifacts"


@pytest.fixture(scope="module")
def browser():
    with Chromium() as b:
        yield b


def _open(browser: Chromium, run: Path, shot: str) -> None:
    browser.errors.clear()
    browser.open(write_report(run).report.as_uri())
    assert browser.eval("document.body.dataset.ready") == "1"
    path = browser.screenshot(ARTIFACTS / shot)
    print(f"screenshot: {path}")


def _points(browser: Chromium, section: str) -> list[int]:
    return browser.eval(
        f"Array.from(document.querySelectorAll('#{section} [data-points]'))"
        ".map(c => +c.dataset.points)"
    )


def test_invalid_run_in_the_browser(browser: Chromium, make_run) -> None:
    run = make_run(lose=True, nodes=True)
    _open(browser, run, "report-invalid.png")
    assert browser.errors == []
    assert browser.eval("document.getElementById('verdict').textContent") == "INVALID"
    kinds = browser.eval(
        "Array.from(document.querySelectorAll('#anomalies .kind h3'))"
        ".map(h => h.firstChild.textContent.trim())"
    )
    assert kinds == ["G1c-realtime", "int-poll-skip", "lost-write", "unseen", "G0"]
    assert browser.eval("document.querySelectorAll('#anomalies ol.instances li').length") == 5
    assert all(n > 0 for n in _points(browser, "perf"))
    assert _points(browser, "timeline") == [14]
    assert browser.eval("document.querySelectorAll('#orders table.orders tr').length") > 3
    assert browser.eval("document.querySelectorAll('#orders td.hl').length") == 1  # value 3
    assert browser.eval("document.querySelectorAll('#orders .orders-wrap table').length") == 1
    assert browser.eval("document.getElementById('rerun').textContent").startswith("jepka test ")
    summary = browser.eval(
        "Object.fromEntries(Array.from(document.querySelectorAll('#summary-table tr'))"
        ".slice(1).map(r => [r.cells[0].textContent, +r.cells[1].textContent]))"
    )
    assert summary == anomaly_counts(json.loads((run / "results.json").read_text()))
    assert browser.eval("document.querySelectorAll('#cycles svg.cycle').length") == 2
    assert browser.eval("document.querySelectorAll('#nodes-table tr').length") == 3
    # an op link in an instance jumps to that op in the history table
    browser.eval("document.querySelector('#kind-lost-write a.op').click()")
    assert browser.eval("document.querySelector('#history-table tr.hl td').textContent") == "6"


LINEAR = "document.getElementById('linear-plot')"


def _linear(browser: Chromium) -> dict[str, str]:
    return browser.eval(f"Object.assign({{}}, {LINEAR}.dataset)")


def _over(browser: Chromium, selector: str) -> tuple[float, float, float, float]:
    """The viewport box of a chart's cursor layer, scrolled into view."""
    return browser.eval(
        f"(() => {{ const o = document.querySelector('{selector} .u-over');"
        " o.scrollIntoView({block: 'center'}); const r = o.getBoundingClientRect();"
        " return [r.left, r.top, r.width, r.height]; })()"
    )


def _drag(browser: Chromium, start: tuple[float, float], end: tuple[float, float]) -> None:
    def mouse(kind: str, at: tuple[float, float], **held: int | str) -> None:
        browser.call("Input.dispatchMouseEvent", type=kind, x=at[0], y=at[1], **held)

    mouse("mouseMoved", start)
    mouse("mousePressed", start, button="left", buttons=1, clickCount=1)
    mouse("mouseMoved", end, button="left", buttons=1)
    mouse("mouseReleased", end, button="left", clickCount=1)


def test_linearizability_view_draws_highlights_hovers_and_zooms(
    browser: Chromium, make_run
) -> None:
    """The invalid run's G1c-realtime cycle: txn A polled from key 3 the record
    txn B sent there, yet A completed before B began."""
    _open(browser, make_run(lose=True), "report-linear.png")
    assert browser.errors == []
    first = browser.eval("document.querySelector('#linear-key option').textContent")
    assert first.startswith("key 3 (jepka-1/1)") and "1 pair(s) of -realtime cycles" in first
    assert _linear(browser) == {"intervals": "2", "pairs": "1", "drawn": "2", "warned": "2"}
    assert "G1c-realtime" in browser.eval("document.getElementById('linear-pairs').textContent")
    browser.eval(
        "document.getElementById('linear').scrollIntoView();"
        "var s = document.getElementById('linear-key');"
        "s.value = Array.from(s.options).find(o => o.text.startsWith('key 0')).value;"
        "s.dispatchEvent(new Event('change'))"
    )
    browser.screenshot(ARTIFACTS / "report-linear-key0.png")
    assert _linear(browser) == {"intervals": "6", "pairs": "0", "drawn": "6", "warned": "0"}
    # hovering over a bar names its op
    chart = f"{LINEAR}.chart"
    left, top, width, height = _over(browser, "#linear-plot")
    x, y = browser.eval(f"[{chart}.valToPos(0.0105, 'x'), {chart}.valToPos(1, 'y')]")
    browser.call("Input.dispatchMouseEvent", type="mouseMoved", x=left + x, y=top + y)
    hover = browser.eval("document.getElementById('linear-hover').textContent")
    assert hover.startswith("op 5 (process 0, send) sent 2 to offset 1"), hover
    # dragging a box zooms in on those times and offsets; a double click shows all
    scale = (
        f"[{chart}.scales.x.min, {chart}.scales.x.max, {chart}.scales.y.min, {chart}.scales.y.max]"
    )
    full = browser.eval(scale)
    _drag(browser, (left + 2, top + 2), (left + width * 0.3, top + height - 2))
    zoomed = browser.eval(scale)
    assert full[0] <= zoomed[0] < zoomed[1] < full[1] - (full[1] - full[0]) / 2, zoomed
    assert 0 < int(_linear(browser)["drawn"]) < 6
    for clicks in (1, 2):
        for kind in ("mousePressed", "mouseReleased"):
            browser.call(
                "Input.dispatchMouseEvent",
                type=kind,
                x=left + width / 2,
                y=top + height / 2,
                button="left",
                clickCount=clicks,
            )
    assert browser.eval(scale) == full and _linear(browser)["drawn"] == "6"
    # the chart follows the window's width
    fits = f"Math.abs({chart}.width - {LINEAR}.clientWidth) <= 1"
    browser.call(
        "Emulation.setDeviceMetricsOverride",
        width=800,
        height=900,
        deviceScaleFactor=1,
        mobile=False,
    )
    try:
        # the window's resize event comes with its next frame
        eventually(lambda: browser.eval(f"{chart}.width < 800 && {fits}"), 10, what="a resize")
    finally:
        browser.call("Emulation.clearDeviceMetricsOverride")
    assert browser.errors == []


def test_linearizability_view_of_a_long_key(browser: Chromium, tmp_path: Path) -> None:
    """3,000 sends to one key, the send of 1500 landing above the next one
    although it completed first: the page holds a bounded window around the
    pair and a sample of the rest, and says what it left out."""
    h = HistoryBuilder()
    for v in range(3000):
        h.op(v % 4, "invoke", "send", [["send", 0, v]])
        h.op(v % 4, "ok", "send", [["send", 0, [{1500: 1501, 1501: 1500}.get(v, v), v]]])
    h.write(tmp_path / "history.jsonl")
    write_report(tmp_path, {"valid": True, "anomalies": {}, "stats": {"graph": {}}})
    _open(browser, tmp_path, "report-linear-long.png")
    assert browser.errors == []
    view = _linear(browser)
    assert view["intervals"] == "1200" and view["pairs"] == "1" and view["warned"] == "2"
    info = browser.eval("document.getElementById('linear-info').textContent")
    assert "1 send(s) landed below" in info and "1800 left out" in info, info


def test_valid_run_in_the_browser(browser: Chromium, make_run) -> None:
    _open(browser, make_run(lose=False), "report-valid.png")
    assert browser.errors == []
    assert browser.eval("document.getElementById('verdict').textContent") == "VALID"
    assert (
        browser.eval("document.querySelector('#kind-G0 .badge').textContent")
        == "1 instance, allowed"
    )
    assert all(n > 0 for n in _points(browser, "perf"))
    unseen, lag = _points(browser, "unseen")  # this checker run measured no lag
    assert unseen > 0 and lag == 0
    assert "No node logs" in browser.eval("document.getElementById('nodes-body').textContent")


def test_history_table_paginates_and_filters(browser: Chromium, tmp_path: Path) -> None:
    h = HistoryBuilder()
    for i in range(250):
        h.op(i % 3, "invoke", "send", [["send", 0, i]])
        h.op(i % 3, "fail" if i % 10 == 0 else "ok", "send", [["send", 0, [i, i]]])
    h.write(tmp_path / "history.jsonl")
    write_report(tmp_path, {"valid": True, "anomalies": {}})
    _open(browser, tmp_path, "report-history.png")
    assert browser.errors == []
    page = "document.getElementById('page').textContent"
    first = "document.querySelector('#history-table tbody td').textContent"
    assert browser.eval(page) == "page 1 of 3" and browser.eval(first) == "0"
    browser.eval("document.getElementById('next').click()")
    assert browser.eval(page) == "page 2 of 3" and browser.eval(first) == "200"
    browser.eval(
        "var s = document.getElementById('f-type'); s.value = 'fail';"
        "s.dispatchEvent(new Event('change'))"
    )
    assert browser.eval(page) == "page 1 of 1"
    assert browser.eval("document.querySelectorAll('#history-table tbody tr').length") == 25
    # the timeline draws its 250 ops on one canvas, not as elements of the page
    assert browser.eval("document.querySelectorAll('#timeline-body *').length") < 20


def test_a_wide_offsets_view_scrolls_inside_the_page(browser: Chromium, tmp_path: Path) -> None:
    """400 offsets of one key and an acknowledged write lost at offset 299: the
    view scrolls in its own box, centred on the cell the anomaly names, and
    the page is never wider than the window."""
    history = HistoryBuilder()
    for v in range(1, 401):
        history.op(0, "invoke", "send", [["send", 0, v]])
        history.op(0, "ok", "send", [["send", 0, [v - 1, v]]])
    history.op(1, "invoke", "poll", [["poll"]])
    read = [[v - 1, v] for v in range(1, 401) if v != 300]
    history.op(1, "ok", "poll", [["poll", {"0": read}]])
    run = tmp_path / "store" / "wide" / "20260101T000000"
    run.mkdir(parents=True)
    history.write(run / "history.jsonl")
    (run / "results.json").write_text(json.dumps(check(str(run / "history.jsonl")), default=str))
    _open(browser, run, "report-wide-offsets.png")
    assert browser.errors == []
    assert browser.eval("document.documentElement.scrollWidth <= window.innerWidth")
    wrap = "document.querySelector('#orders .orders-wrap')"
    assert browser.eval(f"{wrap}.scrollWidth > {wrap}.clientWidth")  # it does scroll
    assert browser.eval(f"{wrap}.scrollLeft > 0 && {wrap}.scrollTop > 0")
    assert browser.eval(
        f"(() => {{ const w = {wrap}.getBoundingClientRect(),"
        f" c = {wrap}.querySelector('td.hl').getBoundingClientRect();"
        " return c.left >= w.left && c.right <= w.right && c.top >= w.top"
        " && c.bottom <= w.bottom; })()"
    )


def test_the_run_index_filters_and_sorts(browser: Chromium, make_run, tmp_path: Path) -> None:
    from reports.render import render_index
    from reports.site import list_runs

    for stamp in ("20260101T000000", "20260101T000200", "20260101T000100"):
        make_run(lose=stamp.endswith("100"), stamp=stamp)
    store = tmp_path / "store"
    index = store / "index.html"
    index.write_text(render_index(list_runs(store), [], str(store)))
    browser.errors.clear()
    browser.open(index.as_uri())
    times = (
        "Array.from(document.querySelectorAll('tr.run'))"
        ".filter(r => !r.hidden).map(r => r.cells[1].textContent)"
    )
    assert browser.eval(times) == ["20260101T000200", "20260101T000100", "20260101T000000"]
    browser.eval("document.querySelectorAll('#runs th')[1].click()")
    assert browser.eval(times) == ["20260101T000000", "20260101T000100", "20260101T000200"]
    browser.eval(
        "const f = document.getElementById('filter'); f.value = 'queue invalid';"
        "f.dispatchEvent(new Event('input'))"
    )
    assert browser.eval(times) == ["20260101T000100"]
    assert browser.errors == []


def _faulty_run(path: Path) -> Path:
    """Sends with latencies over four decades, under a kill and an overlapping
    majority partition, then the final phase from the test's time limit: the
    heal and the final reads."""
    h = HistoryBuilder()
    h.op("nemesis", "invoke", "kill", "one")
    h.op("nemesis", "info", "kill", {"killed": ["n2"]})
    for i in range(40):
        if i == 10:
            h.op("nemesis", "invoke", "start-partition", "majority")
            grudge = {"n1": ["n2", "n3"], "n2": ["n1"], "n3": ["n1"]}
            h.op("nemesis", "info", "start-partition", {"kind": "majority", "grudge": grudge})
        if i == 20:
            h.op("nemesis", "invoke", "start", "all")
            h.op("nemesis", "info", "start", {"started": ["n2"]})
        h.op(i % 3, "invoke", "send", [["send", 0, i]])
        h.op(i % 3, "ok", "send", [["send", 0, [i, i]]], dt_ms=(1, 30, 300, 3000)[i % 4])
    time_limit = h.time / 1e9
    h.op("nemesis", "invoke", "stop-partition")
    h.op("nemesis", "info", "stop-partition", "network healed")
    h.op(5, "invoke", "assign", [0], dt_ms=500, seek_to_beginning=True)
    h.op(5, "ok", "assign", [0])
    h.op(5, "invoke", "poll", [["poll"]], final=True)
    h.op(5, "ok", "poll", [["poll", {"0": [[i, i] for i in range(40)]}]], dt_ms=200, final=True)
    h.write(path / "history.jsonl")
    (path / "test.json").write_text(json.dumps({"spec": {"time_limit": time_limit}}))
    write_report(path, {"valid": True, "anomalies": {}})
    return path


PLOTS = "Array.from(document.querySelectorAll('#perf .plot, #unseen .plot'))"


def test_plots_zoom_hover_and_label_their_faults(browser: Chromium, tmp_path: Path) -> None:
    _open(browser, _faulty_run(tmp_path), "report-plots.png")
    assert browser.errors == []
    assert browser.eval("document.documentElement.scrollWidth <= window.innerWidth")
    # three charts with data; the checker gave no unseen or lag series
    assert browser.eval(f"{PLOTS}.map(p => p.querySelectorAll('.uplot').length)") == [1, 1, 1, 0, 0]
    raw, quantiles, rate = _points(browser, "perf")
    assert raw == 42 and rate == 3 * BUCKETS  # assign, poll and send ops
    assert 0 < quantiles < 3 * 4 * BUCKETS  # buckets without an op are gaps
    chart = "document.querySelector('#perf .plot').chart"
    # log ticks read as round numbers
    ticks = browser.eval(f"{chart}.axes[1]._values.filter(v => v)")
    assert {"1", "10", "100", "1k"} <= set(ticks)
    assert all(re.fullmatch(r"(0\.0*)?[1-9]0*[kMG]?", t) for t in ticks), ticks
    # the cursor over a chart shows its values in the legend
    over = "document.querySelector('#perf .plot:nth-of-type(3) .u-over')"
    browser.eval(
        f"(() => {{ const o = {over}, r = o.getBoundingClientRect();"
        " o.dispatchEvent(new MouseEvent('mousemove', {bubbles: true,"
        " clientX: r.left + r.width / 3, clientY: r.top + r.height / 2})); })()"
    )
    shown = browser.eval(
        "Array.from(document.querySelectorAll('#perf .plot:nth-of-type(3) .u-legend .u-value'))"
        ".map(v => v.textContent)"
    )
    assert len(shown) == 4 and all(re.fullmatch(r"[\d.]+k?", v) for v in shown), shown
    # every fault has a lane labelled with what it did and its nodes; the final phase is marked
    browser.eval(
        "window.drawn = []; const fill = CanvasRenderingContext2D.prototype.fillText;"
        "CanvasRenderingContext2D.prototype.fillText = function (t, ...a) {"
        " window.drawn.push(String(t)); return fill.call(this, t, ...a); };"
        f"{PLOTS}.forEach(p => p.chart && p.chart.redraw())"
    )
    drawn = browser.eval("window.drawn")
    for label in ("kill: n2", "partition majority: n1 \u27c2 n2 n3", "final phase"):
        assert drawn.count(label) == 3, label
    # dragging across a chart zooms in on that time; a double click resets it
    scale = f"[{chart}.scales.x.min, {chart}.scales.x.max]"
    full = browser.eval(scale)
    left, top, width, height = browser.eval(
        "(() => { const o = document.querySelector('#perf .plot .u-over');"
        " o.scrollIntoView({block: 'center'}); const r = o.getBoundingClientRect();"
        " return [r.left, r.top, r.width, r.height]; })()"
    )

    def mouse(kind: str, at: float, **more: object) -> None:
        x, y = left + width * at, top + height / 2
        browser.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, **more)

    mouse("mouseMoved", 0.25)
    mouse("mousePressed", 0.25, button="left", buttons=1, clickCount=1)
    mouse("mouseMoved", 0.4, button="left", buttons=1)
    mouse("mouseReleased", 0.4, button="left", clickCount=1)
    lo, hi = browser.eval(scale)
    assert full[0] < lo < hi < full[1] and hi - lo < (full[1] - full[0]) / 4
    for clicks in (1, 2):
        mouse("mousePressed", 0.5, button="left", buttons=1, clickCount=clicks)
        mouse("mouseReleased", 0.5, button="left", clickCount=clicks)
    assert browser.eval(scale) == full
    assert browser.errors == []


def test_plots_are_sharp_on_a_high_dpi_screen(browser: Chromium, tmp_path: Path) -> None:
    browser.call(
        "Emulation.setDeviceMetricsOverride",
        width=1280,
        height=900,
        deviceScaleFactor=2,
        mobile=False,
    )
    try:
        _open(browser, _faulty_run(tmp_path), "report-plots-2x.png")
        sizes = browser.eval(
            "Array.from(document.querySelectorAll('#perf .uplot canvas'))"
            ".map(c => [c.width, c.getBoundingClientRect().width])"
        )
    finally:
        browser.call("Emulation.clearDeviceMetricsOverride")
    assert browser.errors == []
    assert len(sizes) == 3 and all(abs(w - 2 * css) <= 2 for w, css in sizes), sizes


def test_a_burst_of_lost_writes_reads_as_one_line(browser: Chromium, tmp_path: Path) -> None:
    """21 writes lost at offsets 19-39 of key 0 and one more on key 1: two lines,
    the burst's count and range in its summary, its instances inside."""
    history = HistoryBuilder()
    writers = {}
    for v in range(60):
        key = 1 if v == 50 else 0
        history.op(0, "invoke", "send", [["send", key, v]])
        writers[v] = history.op(0, "ok", "send", [["send", key, [v, v]]])
    history.write(tmp_path / "history.jsonl")
    lost = [
        {
            "key": 1 if v == 50 else 0,
            "offset": v,
            "value": v,
            "writer": {"index": writers[v], "process": "0"},
            "explanation": f"op {writers[v]} (process 0) sent {v}; no OK poll ever saw it.",
        }
        for v in [*range(19, 40), 50]
    ]
    results = {"valid": False, "anomalies": {"lost-write": lost}}
    write_report(tmp_path, results)
    _open(browser, tmp_path, "report-bursts.png")
    assert browser.errors == []
    lines = "document.querySelectorAll('#kind-lost-write ol.instances > li')"
    assert browser.eval(f"{lines}.length") == 2
    summary = "#kind-lost-write li.burst summary"
    assert browser.eval(f"document.querySelector('{summary}').textContent") == (
        "21 lost-write instances on key 0, offsets 19\u201339"
    )
    details = "document.querySelector('#kind-lost-write li.burst details')"
    assert not browser.eval(f"{details}.open")
    browser.eval(f"document.querySelector('{summary}').click()")
    assert browser.eval(f"{details}.open")
    assert browser.eval(f"{details}.querySelectorAll('li.instance').length") == 21
    browser.screenshot(ARTIFACTS / "report-bursts-open.png", "#anomalies")
    assert browser.eval("document.querySelector('#summary-table td.num').textContent") == str(
        anomaly_counts(results)["lost-write"]
    )


def test_the_timeline_names_faults_marks_anomalies_and_the_final_phase(
    browser: Chromium, make_run
) -> None:
    """The invalid run with a 30 ms time limit: the last ~45 ms are the final
    phase, which the axis labels and squeezes."""
    run = make_run(lose=True)
    test = json.loads((run / "test.json").read_text())
    test["spec"]["time_limit"] = 0.03
    (run / "test.json").write_text(json.dumps(test))
    _open(browser, run, "report-timeline.png")
    assert browser.errors == []
    faults = browser.eval(
        "Array.from(document.querySelectorAll('#timeline .tl-nemesis'))"
        ".map(l => [l.dataset.kind,"
        " Array.from(l.querySelectorAll('.tl-fault'), f => f.textContent)])"
    )
    assert faults == [["partition", ["n1 \u27c2 n2 n3"]]]
    final = browser.eval("document.querySelector('#timeline .tl-final').textContent")
    assert final.startswith("final phase, 0.03\u2013") and "compressed" in final
    note = "document.querySelector('#timeline .tl-note').textContent"
    assert browser.eval(note).startswith("The final phase begins at the test's time limit, 0.03 s")
    canvas = "document.getElementById('timeline-canvas')"
    # the lost write and its reader, the real-time cycle's txns, the G0 cycle's txns
    assert browser.eval(f"+{canvas}.dataset.marked") == 6
    browser.eval(f"{canvas}.scrollIntoView({{block: 'center'}})")
    writer = queue_history(True)[1]["send-3"]
    at = browser.eval(f"{canvas}.where({writer})")
    browser.call("Input.dispatchMouseEvent", type="mouseMoved", x=at["x"], y=at["y"])
    tip = browser.eval("document.getElementById('tip').textContent")
    assert tip.startswith(f"op {writer - 1}\u2192{writer} \u00b7 process 0 \u00b7 send \u00b7 ok")
    assert "invoked " in tip and "in lost-write" in tip
    browser.screenshot(ARTIFACTS / "report-timeline-hover.png", "#timeline")
    for kind in ("mousePressed", "mouseReleased"):
        browser.call(
            "Input.dispatchMouseEvent", type=kind, x=at["x"], y=at["y"], button="left", clickCount=1
        )
    shown = "document.querySelector('#anomalies li.hl')"
    assert browser.eval(f"{shown}.closest('.kind').id") == "kind-lost-write"
    assert browser.eval(
        f"(() => {{ const r = {shown}.getBoundingClientRect();"
        " return r.top >= 0 && r.bottom <= innerHeight; })()"
    )
