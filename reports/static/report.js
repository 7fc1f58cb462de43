/* Draws the report from the JSON blob. Re-checks nothing: every judgement shown
   comes from the checker's results. */
"use strict";
var D = JSON.parse(document.getElementById("data").textContent);
var T = D.table, NROWS = T.f.length, PAGE = 100;
var SVGNS = "http://www.w3.org/2000/svg";
var TYPE_COLORS = {ok: "#66bb6a", info: "#ffa726", fail: "#f48fb1", pending: "#bdbdbd"};

function svg(tag, attrs, text) {
  var e = document.createElementNS(SVGNS, tag);
  for (var k in (attrs || {})) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = String(text);
  return e;
}

var tip = document.getElementById("tip");
function hoverTip(node, text) {
  node.addEventListener("mousemove", function (ev) {
    tip.textContent = text; tip.style.display = "block";
    tip.style.left = (ev.clientX + 12) + "px"; tip.style.top = (ev.clientY + 12) + "px";
  });
  node.addEventListener("mouseleave", function () { tip.style.display = "none"; });
}

function opLink(index) {
  var a = el("a", {"class": "op", href: "#op-" + index}, index);
  a.addEventListener("click", function (ev) { ev.preventDefault(); showOp(index); });
  return a;
}

/* ---- history table: filters and pagination over the embedded ops ---- */
var named = {};
D.sections.forEach(function (s) {
  s.instances.forEach(function (i) { i.ops.forEach(function (o) { named[o] = true; }); });
});
var rowOf = {};
for (var r = 0; r < NROWS; r++) {
  if (T.invoke[r] >= 0) rowOf[T.invoke[r]] = r;
  if (T.complete[r] >= 0) rowOf[T.complete[r]] = r;
}
var view = [], page = 0, highlight = null;

function fillSelect(id, values) {
  var s = document.getElementById(id), seen = {};
  values.forEach(function (v) { seen[v] = true; });
  Object.keys(seen).sort().forEach(function (v) { s.appendChild(el("option", {value: v}, v)); });
  s.addEventListener("change", applyFilters);
}

function applyFilters() {
  var text = document.getElementById("f-text").value, p = document.getElementById("f-process").value;
  var f = document.getElementById("f-f").value, t = document.getElementById("f-type").value;
  var onlyNamed = document.getElementById("f-named").checked;
  view = [];
  for (var r = 0; r < NROWS; r++) {
    if (p && T.process[r] !== p) continue;
    if (f && T.f[r] !== f) continue;
    if (t && T.type[r] !== t) continue;
    if (onlyNamed && !(named[T.invoke[r]] || named[T.complete[r]])) continue;
    if (text && T.value[r].indexOf(text) < 0) continue;
    view.push(r);
  }
  page = 0;
  drawPage();
}

function drawPage() {
  var tbody = document.querySelector("#history-table tbody");
  tbody.textContent = "";
  var pages = Math.max(1, Math.ceil(view.length / PAGE));
  page = Math.min(Math.max(0, page), pages - 1);
  view.slice(page * PAGE, page * PAGE + PAGE).forEach(function (r) {
    var tr = el("tr", {"class": "type-" + T.type[r], "data-row": r});
    if (T.invoke[r] >= 0) tr.id = "op-" + T.invoke[r];
    if (highlight === r) tr.className += " hl";
    var lat = T.t1[r] === null ? "" : ((T.t1[r] - T.t0[r]) * 1000).toFixed(2);
    [T.invoke[r], T.complete[r], T.process[r], T.f[r]].forEach(function (v) {
      tr.appendChild(el("td", {}, v < 0 ? "" : v));
    });
    tr.appendChild(el("td", {"class": "t"}, T.type[r]));
    tr.appendChild(el("td", {"class": "num"}, T.t0[r].toFixed(3)));
    tr.appendChild(el("td", {"class": "num"}, lat));
    tr.appendChild(el("td", {"class": "val"}, T.value[r]));
    tr.appendChild(el("td", {"class": "val"}, T.error[r] || ""));
    tbody.appendChild(tr);
  });
  document.getElementById("page").textContent = "page " + (page + 1) + " of " + pages;
}

function showOp(index) {
  var r = rowOf[index];
  if (r === undefined) {
    alertInfo("op " + index + " is not among the ops embedded in this page; see " +
              (D.run.history || "the history file") + ".");
    return;
  }
  ["f-text", "f-process", "f-f", "f-type"].forEach(function (id) {
    document.getElementById(id).value = "";
  });
  document.getElementById("f-named").checked = false;
  applyFilters();
  highlight = r;
  page = Math.floor(view.indexOf(r) / PAGE);
  drawPage();
  document.querySelector('#history-table tr[data-row="' + r + '"]').scrollIntoView({block: "center"});
}

function alertInfo(text) { document.getElementById("history-info").textContent = text; }

function initHistory() {
  fillSelect("f-process", T.process); fillSelect("f-f", T.f); fillSelect("f-type", T.type);
  document.getElementById("f-text").addEventListener("input", applyFilters);
  document.getElementById("f-named").addEventListener("change", applyFilters);
  document.getElementById("prev").addEventListener("click", function () { page--; drawPage(); });
  document.getElementById("next").addEventListener("click", function () { page++; drawPage(); });
  alertInfo(NROWS + " of " + D.summary.ops + " operations embedded" +
            (NROWS < D.summary.ops ? " (those anomalies name, their neighbours, then the " +
             "start of the history); the full history is in " + D.run.history + "." : "."));
  applyFilters();
}

/* ---- anomalies: one line per burst, a burst opens on its instances ---- */
function instanceItem(s, i) {
  var inst = s.instances[i];
  var li = el("li", {"class": "instance", id: instanceId(s, i)});
  li.appendChild(el("span", {}, (inst.explanation || "") + " "));
  if (inst.ops.length) {
    li.appendChild(el("span", {"class": "muted small"}, "ops: "));
    inst.ops.forEach(function (o) { li.appendChild(opLink(o)); });
  }
  var rest = Object.keys(inst.fields).filter(function (k) { return k !== "ops"; });
  if (rest.length) {
    li.appendChild(el("div", {"class": "val muted"}, rest.map(function (k) {
      return k + "=" + inst.fields[k];
    }).join("  ")));
  }
  return li;
}

function instanceId(s, i) { return "inst-" + D.sections.indexOf(s) + "-" + i; }

function initAnomalies() {
  D.sections.forEach(function (s) {
    var ol = document.querySelector('ol.instances[data-kind="' + CSS.escape(s.kind) + '"]');
    s.bursts.forEach(function (b) {
      if (b.label === null) { ol.appendChild(instanceItem(s, b.first)); return; }
      var li = el("li", {"class": "burst"}), det = el("details"), body = el("ol");
      det.appendChild(el("summary", {}, b.label));
      for (var i = b.first; i < b.first + b.shown; i++) body.appendChild(instanceItem(s, i));
      det.appendChild(body);
      if (b.shown < b.count) det.appendChild(el("p", {"class": "muted small"}, (b.count - b.shown) +
        " more of this burst are in results.json, not in this page."));
      li.appendChild(det);
      ol.appendChild(li);
    });
  });
}

/* ---- offsets per key ---- */
// Scrolls a table's own container so that `cell` (the first cell an anomaly
// names, else the first conflict) sits in its middle.
function centreOn(wrap, cell) {
  if (!cell) return;
  var c = cell.getBoundingClientRect(), w = wrap.getBoundingClientRect();
  wrap.scrollTop += c.top - w.top - (wrap.clientHeight - c.height) / 2;
  wrap.scrollLeft += c.left - w.left - (wrap.clientWidth - c.width) / 2;
}

function initOrders() {
  var body = document.getElementById("orders-body");
  if (!D.orders.length) { body.appendChild(el("p", {}, "No anomaly names a key.")); return; }
  D.orders.forEach(function (o) {
    body.appendChild(el("h3", {}, "key " + o.key + " — " + o.kinds.join(", ")));
    if (o.offsets.length < o.total_offsets) {
      body.appendChild(el("p", {"class": "muted small"}, "offsets " + o.offsets[0] + "–" +
        o.offsets[o.offsets.length - 1] + " of " + o.total_offsets + " known"));
    }
    var colors = {}, nc = 0, conflict = {}, hl = {};
    o.conflicts.forEach(function (c) { conflict[c] = true; });
    o.highlight.forEach(function (v) { hl[v] = true; });
    var tbl = el("table", {"class": "orders"}), head = el("tr");
    head.appendChild(el("th", {}, "op \\ offset"));
    o.offsets.forEach(function (off) { head.appendChild(el("th", {}, off)); });
    tbl.appendChild(head);
    var col = {};
    o.offsets.forEach(function (off, i) { col[off] = i; });
    o.rows.forEach(function (row) {
      var tr = el("tr", {"class": "o-" + row.type + (row.named ? " named" : "")});
      var th = el("th");
      th.appendChild(opLink(row.index));
      th.appendChild(el("span", {"class": "small muted"}, " p" + row.process + " " + row.f +
                        (row.unplaced.length ? " " + row.unplaced.join(" ") + "@?" : "")));
      tr.appendChild(th);
      var cells = o.offsets.map(function () { return el("td"); });
      row.cells.forEach(function (c) {
        var td = cells[col[c[0]]];
        td.textContent += (td.textContent ? " " : "") + c[1] + c[2];
        if (conflict[c[0]]) {
          if (!(c[2] in colors)) colors[c[2]] = PALETTE[nc++ % PALETTE.length];
          td.style.background = colors[c[2]]; td.style.color = "#fff";
        }
        if (hl[c[2]]) td.className = "hl";
        hoverTip(td, "op " + row.index + " (" + row.type + ") " + (c[1] === "w" ? "wrote " : "read ") +
                 c[2] + " at offset " + c[0]);
      });
      cells.forEach(function (td) { tr.appendChild(td); });
      tbl.appendChild(tr);
    });
    var wrap = el("div", {"class": "orders-wrap"});
    wrap.appendChild(tbl);
    body.appendChild(wrap);
    centreOn(wrap, tbl.querySelector("td.hl") || tbl.querySelector("td[style]"));
    if (o.truncated_rows) body.appendChild(el("p", {"class": "muted small"},
      o.truncated_rows + " more ops touch these offsets (not shown)."));
  });
}

/* ---- cycles ---- */
function cycleSvg(c) {
  var n = c.nodes.length, R = Math.max(70, n * 22), W = 2 * R + 260, H = 2 * R + 60;
  var s = svg("svg", {width: W, height: H, "class": "cycle"});
  var defs = svg("defs"), m = svg("marker", {id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5,
    markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse"});
  m.appendChild(svg("path", {d: "M 0 0 L 10 5 L 0 10 z", fill: "#444"}));
  defs.appendChild(m); s.appendChild(defs);
  var pos = c.nodes.map(function (_, i) {
    var a = -Math.PI / 2 + 2 * Math.PI * i / n;
    return [W / 2 + R * Math.cos(a), H / 2 + R * Math.sin(a)];
  });
  c.edges.forEach(function (e) {
    var p = pos[e.from], q = pos[e.to], dx = q[0] - p[0], dy = q[1] - p[1];
    var len = Math.sqrt(dx * dx + dy * dy) || 1, k = 18 / len;
    /* bend each edge to its left, so A->B and B->A stay apart */
    var cx = (p[0] + q[0]) / 2 - dy / len * 30, cy = (p[1] + q[1]) / 2 + dx / len * 30;
    var line = svg("path", {d: "M" + (p[0] + dx * k) + "," + (p[1] + dy * k) + " Q" + cx + "," +
      cy + " " + (q[0] - dx * k) + "," + (q[1] - dy * k), fill: "none",
      stroke: /realtime/.test(e.label) ? "#c62828" : "#444",
      "stroke-width": 1.5, "marker-end": "url(#arrow)"});
    s.appendChild(line);
    var lbl = svg("text", {x: cx + 4, y: cy}, e.label);
    s.appendChild(lbl);
    if (e.text) hoverTip(line, e.text);
  });
  c.nodes.forEach(function (nd, i) {
    var g = svg("g", {"class": "node"});
    g.appendChild(svg("circle", {cx: pos[i][0], cy: pos[i][1], r: 16,
      fill: TYPE_COLORS[nd.type] || "#ddd", stroke: "#333"}));
    g.appendChild(svg("text", {x: pos[i][0] - 12, y: pos[i][1] + 4}, "T" + (i + 1)));
    g.appendChild(svg("text", {x: pos[i][0] + 20, y: pos[i][1] + 4},
      "op " + nd.index + " p" + nd.process));
    hoverTip(g, "T" + (i + 1) + " = op " + nd.index + " " + nd.f + " " + nd.type + " " + nd.value);
    g.addEventListener("click", function () { showOp(nd.index); });
    s.appendChild(g);
  });
  return s;
}

function initCycles() {
  var body = document.getElementById("cycles-body");
  if (!D.cycles.length) { body.appendChild(el("p", {}, "The checker reported no cycles.")); return; }
  D.cycles.forEach(function (c) {
    var box = el("div", {"class": "cycle-box"});
    box.appendChild(el("h3", {}, c.kind));
    box.appendChild(el("p", {}, c.explanation));
    box.appendChild(cycleSvg(c));
    body.appendChild(box);
  });
}

/* ---- timeline: one lane per process, one per fault kind, the final phase compressed ---- */
var TL = {L: 96, R: 12, LH: 20, BAR: 14, FINAL_SHARE: 0.2, TOL: 4};

/* Seconds → x, piecewise linear: the main phase gets the width it needs, the
   final phase at most FINAL_SHARE of it (then drawn at a smaller scale). */
function timeScale(end, finalAt, width) {
  var plotW = width - TL.L - TL.R, main = finalAt === null ? end : finalAt;
  var natural = finalAt === null ? 0 : (end - finalAt) / end * plotW;
  var finalW = Math.min(natural, TL.FINAL_SHARE * plotW), mainW = plotW - finalW;
  var x = function (t) {
    return t <= main ? TL.L + t / main * mainW : TL.L + mainW + (t - main) / (end - main) * finalW;
  };
  x.main = main; x.split = TL.L + mainW; x.squeeze = finalW > 0 ? natural / finalW : 1;
  return x;
}

/* Round tick values between lo and hi, about n of them. */
function timeTicks(lo, hi, n) {
  if (!(hi > lo)) return [lo];
  var step = Math.pow(10, Math.floor(Math.log10((hi - lo) / n))), err = (hi - lo) / n / step;
  step *= err >= 7.5 ? 10 : err >= 3.5 ? 5 : err >= 1.5 ? 2 : 1;
  var out = [];
  for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toPrecision(12));
  return out;
}

function seconds(t) { return t === null ? "never" : t.toFixed(3) + " s"; }

function opTip(r, inst) {
  var idx = T.invoke[r] >= 0 ? T.invoke[r] : T.complete[r];
  var lines = ["op " + idx + (T.complete[r] >= 0 && T.invoke[r] >= 0 ? "→" + T.complete[r] : "") +
    " · process " + T.process[r] + " · " + T.f[r] + " · " + T.type[r],
    "value " + (T.value[r].length > 120 ? T.value[r].slice(0, 119) + "…" : T.value[r]),
    "invoked " + seconds(T.t0[r]) + ", completed " + seconds(T.t1[r]) +
    (T.t1[r] === null ? "" : " (" + ((T.t1[r] - T.t0[r]) * 1000).toFixed(1) + " ms)")];
  if (T.error[r]) lines.push("error " + T.error[r]);
  if (inst.length) lines.push("in " + inst.map(function (x) { return x.kind; }).join(", ") +
    " (click to show)");
  return lines.join("\n");
}

/* Which instances (section, position) name each history index. */
function instancesByOp() {
  var out = {};
  D.sections.forEach(function (s) {
    s.instances.forEach(function (inst, i) {
      inst.ops.forEach(function (o) { (out[o] = out[o] || []).push({kind: s.kind, id: instanceId(s, i)}); });
    });
  });
  return out;
}

/* Opens the burst holding an instance, scrolls to it and marks it. */
function revealInstance(id) {
  var li = document.getElementById(id);
  for (var p = li.parentElement; p; p = p.parentElement) if (p.tagName === "DETAILS") p.open = true;
  document.querySelectorAll("#anomalies li.hl").forEach(function (x) { x.classList.remove("hl"); });
  li.classList.add("hl");
  li.scrollIntoView({block: "center"});
}

function timelineHeader(box, x, end, width) {
  var axis = el("div", {"class": "tl-row tl-axis"});
  axis.appendChild(el("span", {"class": "tl-label"}, "seconds"));
  var ticks = timeTicks(0, x.main, Math.max(2, Math.round((x.split - TL.L) / 90)));
  if (x.main < end) ticks = ticks.concat(timeTicks(x.main, end, Math.max(1, Math.round((width - TL.R - x.split) / 90))));
  var last = -Infinity;
  ticks.forEach(function (v) {
    if (x(v) - last < 40) return;  /* where the scales meet, ticks would overlap */
    last = x(v);
    var t = el("span", {"class": "tl-tick"}, +v.toPrecision(6)); t.style.left = last + "px"; axis.appendChild(t);
  });
  box.appendChild(axis);
  var phases = el("div", {"class": "tl-row tl-phases"});
  phases.appendChild(el("span", {"class": "tl-label"}, "phase"));
  var main = el("span", {"class": "tl-phase"}, "main phase, 0–" + +x.main.toPrecision(6) + " s");
  main.style.left = TL.L + "px"; main.style.width = (x.split - TL.L) + "px";
  phases.appendChild(main);
  if (x.main < end) {
    var fin = el("span", {"class": "tl-phase tl-final"}, "final phase, " + +x.main.toPrecision(6) + "–" +
      +end.toPrecision(6) + " s" + (x.squeeze > 1.01 ? ", compressed ×" + x.squeeze.toFixed(1) : ""));
    fin.style.left = x.split + "px"; fin.style.width = (width - TL.R - x.split) + "px";
    var note = "The final phase begins at the test's time limit, " + x.main + " s: the nemesis heals, " +
      "the run waits for recovery and polls every key once more. " + (x.squeeze > 1.01 ? "It is drawn " +
      x.squeeze.toFixed(1) + " times narrower than the main phase, so that it cannot crowd the axis; " +
      "mind the change of scale at the dashed line." : "It is drawn at the main phase's scale.");
    hoverTip(fin, note);
    phases.appendChild(fin);
    box.parentNode.insertBefore(el("p", {"class": "small tl-note"}, note), box);
  }
  box.appendChild(phases);
  D.timeline.lanes.forEach(function (lane) {
    var row = el("div", {"class": "tl-row tl-nemesis", "data-kind": lane.kind});
    row.appendChild(el("span", {"class": "tl-label"}, lane.kind));
    lane.faults.forEach(function (f) {
      var x0 = x(f.start), x1 = x(f.end === null ? end : f.end);
      var bar = el("span", {"class": "tl-fault", "data-nodes": f.nodes.join(" ")}, f.label);
      bar.style.left = x0 + "px"; bar.style.width = Math.max(3, x1 - x0) + "px";
      bar.style.background = "var(--" + lane.kind + ", var(--other))";
      hoverTip(bar, f.f + " " + f.label + "\n" + seconds(f.start) + " → " +
        (f.end === null ? "not healed" : seconds(f.end)) + "\n" + f.value);
      row.appendChild(bar);
    });
    box.appendChild(row);
  });
}

function initTimeline() {
  var body = document.getElementById("timeline-body"), end = D.end || 1;
  var width = Math.max(700, body.clientWidth), finalAt = D.timeline.final;
  var x = timeScale(end, finalAt, width);
  if (NROWS < D.summary.ops) body.appendChild(el("p", {"class": "small"}, "It draws the " + NROWS + " of " +
    D.summary.ops + " operations this page holds: those anomalies name, their neighbours, then the start " +
    "of the history."));
  var box = el("div", {"class": "tl"});
  box.style.width = width + "px";
  body.appendChild(box);
  timelineHeader(box, x, end, width);
  /* lanes of processes, each lane's rows by start time (one process runs one op at a time) */
  var laneOf = {}, names = [];
  for (var r = 0; r < NROWS; r++) if (!(T.process[r] in laneOf)) { laneOf[T.process[r]] = []; names.push(T.process[r]); }
  names.sort(function (a, b) { return (+a) - (+b) || (a < b ? -1 : a > b ? 1 : 0); });
  var lanes = names.map(function (p) { return laneOf[p]; });
  for (r = 0; r < NROWS; r++) laneOf[T.process[r]].push(r);
  lanes.forEach(function (rows) { rows.sort(function (a, b) { return T.t0[a] - T.t0[b]; }); });
  var laneIndex = {};
  names.forEach(function (p, i) { laneIndex[p] = i; });
  var scroll = el("div", {"class": "tl-scroll"}), H = Math.max(TL.LH, names.length * TL.LH);
  var dpr = window.devicePixelRatio || 1;
  var cv = el("canvas", {width: width * dpr, height: H * dpr, id: "timeline-canvas"});
  cv.style.width = width + "px"; cv.style.height = H + "px";
  scroll.appendChild(cv);
  box.appendChild(scroll);
  var ctx = cv.getContext("2d"), css = getComputedStyle(document.documentElement);
  ctx.scale(dpr, dpr);
  ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, width, H);
  for (var i = 1; i < names.length; i += 2) { ctx.fillStyle = "#f6f6f6"; ctx.fillRect(TL.L, i * TL.LH, width, TL.LH); }
  D.timeline.lanes.forEach(function (lane) {
    ctx.fillStyle = (css.getPropertyValue("--" + lane.kind) || css.getPropertyValue("--other")).trim();
    ctx.globalAlpha = 0.35;
    lane.faults.forEach(function (f) {
      ctx.fillRect(x(f.start), 0, Math.max(1, x(f.end === null ? end : f.end) - x(f.start)), H);
    });
    ctx.globalAlpha = 1;
  });
  if (finalAt !== null) {
    ctx.fillStyle = "rgba(90, 90, 160, 0.08)"; ctx.fillRect(x.split, 0, width - TL.R - x.split, H);
    ctx.strokeStyle = "#5a5aa0"; ctx.setLineDash([4, 3]);
    ctx.beginPath(); ctx.moveTo(x.split, 0); ctx.lineTo(x.split, H); ctx.stroke(); ctx.setLineDash([]);
  }
  ctx.font = "11px system-ui, sans-serif"; ctx.fillStyle = "#333";
  names.forEach(function (p, i) { ctx.fillText("process " + p, 4, i * TL.LH + 14); });
  var byOp = instancesByOp(), marked = [];
  var instOf = function (r) { return (byOp[T.invoke[r]] || []).concat(byOp[T.complete[r]] || []); };
  var span = function (r) {
    var x0 = x(T.t0[r]);
    return [x0, Math.max(x0 + 2, x(T.t1[r] === null ? end : T.t1[r]))];
  };
  var top = function (r) { return laneIndex[T.process[r]] * TL.LH + (TL.LH - TL.BAR) / 2; };
  for (r = 0; r < NROWS; r++) {
    var s = span(r);
    ctx.fillStyle = TYPE_COLORS[T.type[r]] || "#999";
    ctx.fillRect(s[0], top(r), s[1] - s[0], TL.BAR);
    if (instOf(r).length) marked.push(r);
  }
  ctx.strokeStyle = "#b71c1c"; ctx.lineWidth = 2;
  marked.forEach(function (r) {
    var s = span(r);
    ctx.fillStyle = "#e53935"; ctx.fillRect(s[0], top(r), s[1] - s[0], TL.BAR);
    ctx.strokeRect(s[0] - 1, top(r) - 1, s[1] - s[0] + 2, TL.BAR + 2);
  });
  cv.dataset.points = NROWS;
  cv.dataset.marked = marked.length;

  /* The row drawn under a point of the canvas (CSS pixels), or -1: of the bars
     within TOL pixels, a marked one (drawn on top), else the nearest. A
     lane's bars do not overlap, so those near px lie around the last bar
     starting at or before it. */
  var rowAt = function (px, py) {
    var rows = lanes[Math.floor(py / TL.LH)] || [], lo = 0, hi = rows.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (span(rows[mid])[0] <= px) lo = mid + 1; else hi = mid; }
    var best = -1, bestd = Infinity, j;
    var weigh = function (r) {
      var sp = span(r), d = px < sp[0] ? sp[0] - px : px > sp[1] ? px - sp[1] : 0;
      if (d > TL.TOL) return false;
      if (instOf(r).length) d -= TL.TOL + 1;
      if (d < bestd) { bestd = d; best = r; }
      return true;
    };
    for (j = lo - 1; j >= 0 && weigh(rows[j]); j--);
    for (j = lo; j < rows.length && weigh(rows[j]); j++);
    return best;
  };
  var pointed = function (ev) {
    var rect = cv.getBoundingClientRect();
    return rowAt(ev.clientX - rect.left, ev.clientY - rect.top);
  };
  cv.addEventListener("mousemove", function (ev) {
    var r = pointed(ev);
    cv.style.cursor = r < 0 ? "default" : "pointer";
    if (r < 0) { tip.style.display = "none"; return; }
    tip.textContent = opTip(r, instOf(r)); tip.style.display = "block";
    tip.style.left = (ev.clientX + 12) + "px"; tip.style.top = (ev.clientY + 12) + "px";
  });
  cv.addEventListener("mouseleave", function () { tip.style.display = "none"; });
  cv.addEventListener("click", function (ev) {
    var r = pointed(ev), inst = r < 0 ? [] : instOf(r);
    if (inst.length) revealInstance(inst[0].id);
    else if (r >= 0) showOp(T.invoke[r] >= 0 ? T.invoke[r] : T.complete[r]);
  });
  /* where an op's bar is, in client coordinates (the browser tests point at ops with it) */
  cv.where = function (index) {
    var r = rowOf[index], s = span(r), rect = cv.getBoundingClientRect();
    return {x: rect.left + (s[0] + s[1]) / 2, y: rect.top + top(r) + TL.BAR / 2};
  };
}

/* ---- plots ---- */
function initPlots() {
  var perf = document.getElementById("perf-body"), un = document.getElementById("unseen-body");
  /* the timeline's faults, every kind in order of start, so lanes pack as they happened */
  var faults = [].concat.apply([], D.timeline.lanes.map(function (lane) { return lane.faults; }));
  faults.sort(function (a, b) { return a.start - b.start; });
  var common = {faults: faults, final: D.timeline.final, xmax: D.end, xlabel: "time (s)",
                mode: "lines"};
  [[perf, {title: "Latency, raw (downsampled: each bucket's fastest and slowest op)",
     series: D.latency_raw, mode: "points", ylabel: "latency (ms)", logy: true,
     empty: "no completed operations"}],
   [perf, {title: "Latency quantiles (ok ops)", series: D.latency_quantiles,
     ylabel: "latency (ms)", logy: true, empty: "no ok operations"}],
   [perf, {title: "Throughput", series: D.throughput, ylabel: "ops/s",
     empty: "no completed operations"}],
   [un, {title: "Unseen messages (acknowledged, not yet polled by anyone)", series: D.unseen.series,
     ylabel: "messages", empty: "the checker gave no unseen series"}],
   [un, {title: "Realtime lag", series: D.lag.series, ylabel: "lag (s)",
     empty: "the checker gave no lag series"}]
  ].forEach(function (p) { plot(p[0], Object.assign({}, common, p[1])); });
}

/* ---- broker logs and stats ---- */
function initNodes() {
  var body = document.getElementById("nodes-body"), n = D.nodes;
  if (!n.present) { body.appendChild(el("p", {}, "No node logs were collected for this run (no nodes/ folder).")); return; }
  body.appendChild(el("p", {}, n.events.length + " event lines from " + n.nodes.length + " node(s)" +
    (n.truncated ? " (capped)" : "") + "."));
  var tbl = el("table", {id: "nodes-table"});
  tbl.appendChild(el("tr")).append(el("th", {}, "s"), el("th", {}, "node"), el("th", {}, "kind"),
    el("th", {}, "line"));
  n.events.forEach(function (e) {
    var tr = el("tr", e.internal ? {"class": "muted"} : {});
    tr.append(el("td", {title: e.time || ""}, e.at === null || e.at === undefined ? "" : e.at.toFixed(1)),
      el("td", {}, e.node), el("td", {}, e["class"]),
      el("td", {"class": "val", title: e.file + ":" + e.line}, e.text));
    tbl.appendChild(tr);
  });
  body.appendChild(tbl);
}

function initStats() {
  var body = document.getElementById("stats-body"), tbl = el("table");
  var add = function (k, v) { var tr = el("tr"); tr.append(el("th", {}, k), el("td", {"class": "val"}, v)); tbl.appendChild(tr); };
  Object.keys(D.stats).forEach(function (k) { add(k, D.stats[k]); });
  Object.keys(D.timings).forEach(function (k) { add("time: " + k, JSON.stringify(D.timings[k])); });
  body.appendChild(tbl.children.length ? tbl : el("p", {"class": "muted"}, "None."));
}

[initHistory, initAnomalies, initOrders, initCycles, initLinear, initTimeline, initPlots,
 initNodes, initStats].forEach(function (f) { f(); });
document.body.dataset.ready = "1";
