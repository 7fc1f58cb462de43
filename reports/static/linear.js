/* The linearizability view of each partition log (data: reports/linear.py).
   Per key, every send is a bar from invocation to completion at the height of
   the offset it got (polls a -realtime cycle names: at the offset they read).
   A pair where one op completed before the other began yet sits above it is
   drawn in the warning colour, linked from the first's completion to the
   second's invocation (solid when a checker's cycle names it, dashed when only
   the offsets show it). Drawn on uPlot: drag a box to zoom in on times and
   offsets, double click to see it all; hover shows the op, a click opens it in
   the history. */
"use strict";
var LIN_WARN = "#e65100", LIN_COLORS = {w: "#66bb6a", r: "#42a5f5"}, LIN_HEIGHT = 360;
var LIN_INCRS = [];  // whole offsets only on the offset axis
for (var p10 = 1; p10 < 1e15; p10 *= 10) LIN_INCRS.push(p10, 2 * p10, 5 * p10);

function initLinear() {
  var body = document.getElementById("linear-body"), lin = D.linear;
  if (!lin.checked) body.appendChild(el("p", {"class": "muted"},
    "The checker's results do not include real-time cycle kinds; it checked no real-time order."));
  if (!lin.keys.length) { body.appendChild(el("p", {}, "No partition log in this history.")); return; }
  var select = el("select", {id: "linear-key"});
  lin.keys.forEach(function (k, i) {
    var found = [k.violations ? k.violations + " landed below an earlier one" : "",
                 k.checker_pairs ? k.checker_pairs + " pair(s) of -realtime cycles" : ""];
    var text = "key " + k.key + (k.label !== k.key ? " (" + k.label + ")" : "") + ": " +
      k.sends + " sends, " + (found.filter(Boolean).join(", ") ||
      (k.cycles.length ? "in a -realtime cycle" : k.named ? "named by anomalies" : "no violation"));
    var opt = el("option", {value: i}, text + (k.ops ? "" : " (not embedded)"));
    if (!k.ops) opt.disabled = true;
    select.appendChild(opt);
  });
  var controls = el("div", {"class": "small"});
  controls.append(el("label", {"for": "linear-key"}, "Partition log: "), select);
  var info = el("p", {id: "linear-info", "class": "small"});
  var box = el("div", {"class": "plot", id: "linear-plot"});
  var hover = el("p", {id: "linear-hover", "class": "small val"}, "\u00a0");
  var list = el("div", {id: "linear-pairs"});
  body.append(controls, info, box, hover, list);
  if (lin.keys.length > lin.max_keys) body.appendChild(el("p", {"class": "muted small"},
    "Only the first " + lin.max_keys + " keys of the list (those with violations, then those " +
    "anomalies name) carry their sends in this page; the other " +
    (lin.keys.length - lin.max_keys) + " are listed with their counts" +
    (lin.unlisted ? ", and " + lin.unlisted + " more keys are not listed" : "") + "."));
  select.addEventListener("change", function () { linearKey(lin.keys[+select.value], box, info, hover, list); });
  window.addEventListener("resize", function () {
    if (box.chart) box.chart.setSize({width: Math.max(300, box.clientWidth), height: LIN_HEIGHT});
  });
  linearKey(lin.keys[0], box, info, hover, list);
}

/* A zoomed scale is what the drag asked for, with no padding. */
function asAsked(u, lo, hi) { return [lo, hi]; }

/* Shows one key: what the page holds of it, its chart and its pairs. */
function linearKey(k, box, info, hover, list) {
  if (box.chart) { box.chart.destroy(); box.chart = null; }
  box.textContent = ""; list.textContent = ""; hover.textContent = "\u00a0";
  var o = k.ops, n = o.t0.length, sends = o.mop.filter(function (m) { return m === "w"; }).length;
  var found = (k.violations || "No") + " send(s) landed below a send that had completed before they began";
  if (k.checker_pairs) found += "; the checker's -realtime cycles name " + k.checker_pairs + " pair(s) here";
  info.textContent = found + ". Showing " + sends + " of " + k.sends + " sends" +
    (sends < k.sends ? ": " + k.windowed + " around the violations, " + k.sampled +
     " sampled evenly from the rest; " + (k.sends - sends) + " left out" : "") +
    (k.pairs.length < k.pairs_total ? "; the first " + k.pairs.length + " of " + k.pairs_total + " pairs drawn" : "") + ".";
  box.dataset.intervals = n;
  box.dataset.pairs = k.pairs.length;
  if (!n) { box.appendChild(el("p", {"class": "muted"}, "No acknowledged send on this key.")); return; }
  var warn = new Uint8Array(n);
  k.pairs.forEach(function (p) { warn[p[0]] = 1; warn[p[1]] = 1; });
  var x0 = Math.min.apply(null, o.t0), x1 = Math.max.apply(null, o.t1), pad = (x1 - x0) * 0.02 || 1e-3;
  var y0 = Math.min.apply(null, o.offset) - 0.5, y1 = Math.max.apply(null, o.offset) + 0.5;
  x0 -= pad; x1 += pad;
  var hovered = -1;
  function geometry(u, i) {
    var px = uPlot.pxRatio, a = u.valToPos(o.t0[i], "x", true), b = u.valToPos(o.t1[i], "x", true);
    var y = u.valToPos(o.offset[i], "y", true);
    var lane = Math.abs(u.valToPos(o.offset[i] + 1, "y", true) - y);
    var h = Math.max(2 * px, Math.min(14 * px, lane * 0.7)) / (o.mop[i] === "r" ? 2 : 1);
    return {a: a, b: Math.max(b, a + px), y: y, h: h};
  }
  function draw(u) {
    var ctx = u.ctx, px = uPlot.pxRatio, bb = u.bbox, drawn = 0, warned = 0;
    ctx.save();
    ctx.beginPath(); ctx.rect(bb.left, bb.top, bb.width, bb.height); ctx.clip();
    ctx.font = 11 * px + "px system-ui, sans-serif";
    ctx.textAlign = "left"; ctx.textBaseline = "middle";
    for (var i = 0; i < n; i++) {
      var g = geometry(u, i);
      if (g.b < bb.left || g.a > bb.left + bb.width || g.y < bb.top - g.h || g.y > bb.top + bb.height + g.h) continue;
      drawn++; if (warn[i]) warned++;
      ctx.fillStyle = warn[i] ? LIN_WARN : LIN_COLORS[o.mop[i]];
      ctx.fillRect(g.a, g.y - g.h / 2, g.b - g.a, g.h);
      if (i === hovered) { ctx.strokeStyle = "#000"; ctx.lineWidth = px; ctx.strokeRect(g.a, g.y - g.h / 2, g.b - g.a, g.h); }
      if (g.b - g.a > 60 * px && g.h >= 7 * px) {
        ctx.fillStyle = warn[i] ? "#fff" : "#123";
        ctx.fillText("op " + o.index[i], g.a + 3 * px, g.y);
      }
    }
    ctx.strokeStyle = LIN_WARN; ctx.fillStyle = LIN_WARN; ctx.lineWidth = 2 * px;
    k.pairs.forEach(function (p) {
      var a = geometry(u, p[0]), b = geometry(u, p[1]);
      ctx.setLineDash(p[2] >= 0 ? [] : [5 * px, 3 * px]);
      ctx.beginPath(); ctx.moveTo(a.b, a.y); ctx.lineTo(a.b, a.y + (b.y > a.y ? 1 : -1) * a.h / 2);
      ctx.lineTo(b.a, b.y); ctx.stroke();
      ctx.beginPath(); ctx.arc(b.a, b.y, 3 * px, 0, 2 * Math.PI); ctx.fill();
    });
    ctx.restore();
    box.dataset.drawn = drawn; box.dataset.warned = warned;
  }
  function pick(u) {
    if (u.cursor.left === undefined || u.cursor.left < 0) return -1;
    var px = uPlot.pxRatio, cx = u.bbox.left + u.cursor.left * px, cy = u.bbox.top + u.cursor.top * px;
    var best = -1, bestd = Infinity;
    for (var i = 0; i < n; i++) {
      var g = geometry(u, i), dy = Math.abs(g.y - cy);
      if (cx < g.a - 3 * px || cx > g.b + 3 * px || dy > g.h / 2 + 3 * px) continue;
      if (dy < bestd) { bestd = dy; best = i; }
    }
    return best;
  }
  function describe(i) {
    var text = "op " + o.index[i] + " (process " + o.process[i] + ", " + o.f[i] + ") " +
      (o.mop[i] === "w" ? "sent " + o.value[i] + " to" : "polled") + " offset " + o.offset[i] +
      ": invoked " + o.t0[i].toFixed(6) + " s, completed " + o.t1[i].toFixed(6) + " s (" +
      ((o.t1[i] - o.t0[i]) * 1000).toFixed(2) + " ms)";
    k.pairs.forEach(function (p) {
      if (p[0] === i) text += "; completed before op " + o.index[p[1]] + " began, yet sits above it";
      if (p[1] === i) text += "; began after op " + o.index[p[0]] + " completed, yet sits below it";
    });
    return text;
  }
  var width = Math.max(300, box.clientWidth), down = null;
  var opts = {
    width: width, height: LIN_HEIGHT,
    cursor: {drag: {x: true, y: true, uni: 20}, points: {show: false}, y: false},
    legend: {show: false},
    scales: {x: {time: false, auto: false, min: x0, max: x1, range: asAsked},
             y: {auto: false, min: y0, max: y1, range: asAsked}},
    axes: [
      {label: "time (s)", font: AXIS_FONT, labelFont: AXIS_FONT, grid: {stroke: "#eee"}},
      {label: "offset", font: AXIS_FONT, labelFont: AXIS_FONT, labelSize: 20, size: axisSize,
       incrs: LIN_INCRS, grid: {stroke: "#eee"}}
    ],
    series: [{}, {stroke: "transparent", paths: function () { return null; }, points: {show: false}}],
    hooks: {
      draw: [draw],
      setCursor: [function (u) {
        var i = pick(u);
        if (i === hovered) return;
        hovered = i;
        hover.textContent = i < 0 ? "\u00a0" : describe(i);
        u.redraw(false);
      }]
    }
  };
  var chart = el("div");
  box.appendChild(chart);
  box.chart = new uPlot(opts, [[x0, x1], [y0, y1]], chart);
  box.reset = function () {
    box.chart.setScale("x", {min: x0, max: x1});
    box.chart.setScale("y", {min: y0, max: y1});
  };
  var over = box.chart.over;
  over.addEventListener("dblclick", box.reset);
  over.addEventListener("mousedown", function (ev) { down = [ev.clientX, ev.clientY]; });
  over.addEventListener("click", function (ev) {
    var still = down && Math.abs(ev.clientX - down[0]) + Math.abs(ev.clientY - down[1]) < 4;
    if (still && hovered >= 0) showOp(o.index[hovered]);
  });
  pairList(k, list);
}

/* The key's pairs in words, with links to their ops, and the cycles through it. */
function pairList(k, list) {
  var o = k.ops, ol = el("ol", {"class": "small"});
  k.pairs.slice(0, 50).forEach(function (p) {
    var a = p[0], b = p[1], li = el("li");
    function what(i) { return " (" + o.f[i] + ", " + (o.mop[i] === "w" ? "sent to" : "polled") + " offset " + o.offset[i] + ") "; }
    li.append("op ", opLink(o.index[a]), what(a) + "completed at " + o.t1[a].toFixed(6) + " s, before op ",
      opLink(o.index[b]), what(b) + "began at " + o.t0[b].toFixed(6) + " s" +
      (p[2] >= 0 ? ": the checker's " + D.cycles[p[2]].kind + " cycle (below)" : ", yet it landed above"));
    ol.appendChild(li);
  });
  if (k.pairs.length) list.appendChild(ol);
  if (k.pairs.length > 50) list.appendChild(el("p", {"class": "muted small"},
    "The chart draws all " + k.pairs.length + " pairs; the list stops at 50."));
  k.cycles.forEach(function (i) {
    var c = D.cycles[i];
    list.appendChild(el("p", {"class": "small"}, c.kind + " through keys " + c.keys.join(", ") + ": " + c.explanation));
  });
  D.linear.unplaced.forEach(function (i) {
    var c = D.cycles[i];
    list.appendChild(el("p", {"class": "small muted"}, c.kind + " (no key known): " + c.explanation));
  });
}
