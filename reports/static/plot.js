/* The report's plots, drawn by uPlot (vendor/uplot, inlined before this file):
   zoom by dragging (double-click resets), values under the cursor in the legend,
   one labelled lane per fault above the data, the final phase shaded.
   Also the small helpers the rest of the page shares. */
"use strict";
var PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
               "#17becf", "#bcbd22", "#7f7f7f", "#393b79", "#ad494a", "#637939", "#e6550d",
               "#7b4173", "#3182bd", "#31a354", "#843c39", "#6b6ecf", "#b5cf6b"];
var DASHES = [[], [6, 3], [2, 3], [8, 3, 2, 3]];  // after every PALETTE.length series
var BAND_COLORS = {partition: "#e9dca0", kill: "#e9a4a0", pause: "#a0b1e9", clock: "#a0e9e3",
                   disk: "#d0a0e9", other: "#cccccc"};
var FINAL_COLOR = "#9e9e9e";
var LANE_H = 15, LANE_FONT = "11px system-ui, sans-serif", AXIS_FONT = "12px system-ui, sans-serif";
var PLOT_H = 300;

function el(tag, attrs, text) {
  var e = document.createElement(tag);
  for (var k in (attrs || {})) e.setAttribute(k, attrs[k]);
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function niceTicks(lo, hi, n) {
  if (!(hi > lo)) { hi = lo + 1; }
  var step = Math.pow(10, Math.floor(Math.log10((hi - lo) / n)));
  var err = (hi - lo) / n / step;
  if (err >= 7.5) step *= 10; else if (err >= 3.5) step *= 5; else if (err >= 1.5) step *= 2;
  var out = [];
  for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(v);
  return out;
}

function fmt(v) {
  var a = Math.abs(v);
  if (a >= 1e4 || (a > 0 && a < 1e-2)) return v.toExponential(1);
  return String(Math.round(v * 1000) / 1000);
}

/* A tick or legend value, short: 1, 2.5, 1k, 10k, 1.5M, 0.01. */
function si(v) {
  if (v === null || v === undefined) return null;
  var a = Math.abs(v), units = [[1e9, "G"], [1e6, "M"], [1e3, "k"]];
  for (var i = 0; i < units.length; i++) {
    if (a >= units[i][0]) return +(v / units[i][0]).toPrecision(3) + units[i][1];
  }
  return String(+v.toPrecision(3));
}
function ticks(u, vs) { return vs.map(si); }
function legendValue(u, v) { return v === null || v === undefined ? "--" : si(v); }

/* The values a line cannot show, with no value before or after them (before a
   gap or the edge): drawn as points. Undefined is an x of another series only. */
function isolated(u, seriesIdx) {
  var ys = u.data[seriesIdx], out = [];
  function near(i, step) {
    for (i += step; i >= 0 && i < ys.length; i += step) if (ys[i] !== undefined) return ys[i];
    return null;
  }
  for (var i = 0; i < ys.length; i++) {
    if (ys[i] != null && near(i, -1) === null && near(i, 1) === null) out.push(i);
  }
  return out;
}

/* On a log axis, grid lines at the powers of ten only (ticks stay at every 1..9 step). */
function decades(u, splits) {
  return splits.map(function (v) { return Math.abs(Math.log10(v) % 1) < 1e-9 ? v : null; });
}

/* An axis just wide enough for its longest tick label, so its title never overlaps. */
function axisSize(u, values, axisIdx, cycleNum) {
  var axis = u.axes[axisIdx];
  if (cycleNum > 1) return axis._size;
  var longest = (values || []).reduce(function (a, v) { return v && v.length > a.length ? v : a; }, "");
  u.ctx.font = axis.font[0];
  return Math.ceil(axis.ticks.size + axis.gap + u.ctx.measureText(longest).width / uPlot.pxRatio) + 4;
}

/* Lanes for the fault labels: each fault (and the final phase) goes to the first
   lane where its bar and label do not meet an earlier one, at the plot's first width. */
function packLanes(items, xmax, width) {
  var ctx = document.createElement("canvas").getContext("2d"), ends = [];
  ctx.font = LANE_FONT;
  items.forEach(function (b) {
    var x0 = b.start / xmax * width, x1 = (b.end === null ? xmax : b.end) / xmax * width;
    var w = ctx.measureText(b.label).width + 8, left = Math.min(x0, width - w);
    var lane = ends.findIndex(function (e) { return e <= left; });
    if (lane < 0) { lane = ends.length; ends.push(0); }
    ends[lane] = Math.max(x1, left + w);
    b.lane = lane;
  });
  return ends.length;
}

/* Draws the faults and the final phase: a faint band over the data, so overlaps
   stay readable, and a labelled bar in the item's own lane above it. */
function lanesPlugin(items, lanes) {
  function span(u, b) {
    var end = b.end === null ? u.scales.x.max : b.end;
    var x0 = u.valToPos(b.start, "x", true), x1 = u.valToPos(end, "x", true);
    var left = u.bbox.left, right = left + u.bbox.width;
    return [Math.max(left, x0), Math.max(Math.min(right, x1), Math.max(left, x0) + uPlot.pxRatio)];
  }
  function color(b) { return b.kind === "final" ? FINAL_COLOR : BAND_COLORS[b.kind] || BAND_COLORS.other; }
  return {hooks: {
    drawClear: function (u) {
      var ctx = u.ctx;
      ctx.save();
      items.forEach(function (b) {
        var s = span(u, b);
        if (s[0] >= u.bbox.left + u.bbox.width) return;
        ctx.globalAlpha = b.kind === "final" ? 0.15 : 0.3;
        ctx.fillStyle = color(b);
        ctx.fillRect(s[0], u.bbox.top, s[1] - s[0], u.bbox.height);
      });
      ctx.restore();
    },
    draw: function (u) {
      var ctx = u.ctx, px = uPlot.pxRatio, h = (LANE_H - 2) * px;
      ctx.save();
      ctx.font = LANE_FONT.replace(/\d+px/, function (m) { return parseInt(m, 10) * px + "px"; });
      ctx.textAlign = "left"; ctx.textBaseline = "middle";
      items.forEach(function (b) {
        var s = span(u, b), right = u.bbox.left + u.bbox.width;
        if (s[0] >= right) return;
        var y = u.bbox.top - (lanes - b.lane) * LANE_H * px;
        ctx.fillStyle = color(b);
        ctx.fillRect(s[0], y, s[1] - s[0], h);
        var tx = Math.max(u.bbox.left, Math.min(s[0], right - ctx.measureText(b.label).width - 6 * px));
        ctx.save();
        ctx.beginPath(); ctx.rect(tx, y, right - tx, h); ctx.clip();
        ctx.fillStyle = "#222";
        ctx.fillText(b.label, tx + 3 * px, y + h / 2);
        ctx.restore();
      });
      ctx.restore();
    }
  }};
}

/* plot(container, {title, series: [{name, n, x, y}], faults: [{kind, start, end, title}],
   final, mode: "points"|"lines", xlabel, ylabel, logy, xmax, empty}) draws one chart into
   a new .plot box and returns the box; its data-points says how many points it shows.
   A null y is a gap; a fault's lane bar is labelled with its title. */
function plot(container, spec) {
  var box = el("div", {"class": "plot"});
  if (spec.title) box.appendChild(el("h3", {}, spec.title));
  container.appendChild(box);
  var series = spec.series || [], points = 0, xmax = spec.xmax || 0;
  var tables = series.map(function (s) {
    var y = s.y.map(function (v) { return v === null || (spec.logy && !(v > 0)) ? null : v; });
    y.forEach(function (v) { if (v !== null) points++; });
    if (s.x.length) xmax = Math.max(xmax, s.x[s.x.length - 1]);
    return [s.x, y];
  });
  box.dataset.points = points;
  if (!points) {
    box.appendChild(el("p", {"class": "muted"}, spec.empty || "no data"));
    return box;
  }
  xmax = xmax || 1;
  var items = (spec.faults || []).map(function (f) {
    return {kind: f.kind, start: f.start, end: f.end, label: f.title};
  });
  if (spec.final !== null && spec.final !== undefined) {
    items.push({kind: "final", start: spec.final, end: null, label: "final phase"});
  }
  var width = Math.max(300, box.clientWidth);
  var lanes = packLanes(items, xmax, width - 80);
  var asPoints = spec.mode !== "lines";
  var opts = {
    width: width, height: PLOT_H + lanes * LANE_H,
    padding: [lanes * LANE_H + 6, 24, 0, 0],
    cursor: {drag: {x: true, y: false}},
    legend: {live: true},
    scales: {
      x: {time: false, range: function (u, lo, hi) {  // the whole run unless zoomed in
        var xs = u.data[0];
        return lo <= xs[0] && hi >= xs[xs.length - 1] ? [Math.min(0, lo), Math.max(hi, xmax)] : [lo, hi];
      }},
      y: spec.logy ? {distr: 3, log: 10} : {range: function (u, lo, hi) {
        return uPlot.rangeNum(Math.min(0, lo), hi, 0.1, true);
      }}
    },
    axes: [
      {label: spec.xlabel || "", font: AXIS_FONT, labelFont: AXIS_FONT,
       values: ticks, grid: {stroke: "#eee"}},
      {label: spec.ylabel || "", font: AXIS_FONT, labelFont: AXIS_FONT, labelSize: 20,
       size: axisSize, values: ticks,
       grid: spec.logy ? {stroke: "#e4e4e4", filter: decades} : {stroke: "#eee"}}
    ],
    series: [{label: spec.xlabel || "x", value: legendValue}]
      .concat(series.map(function (s, i) {
        var c = PALETTE[i % PALETTE.length];
        return {
          label: s.name + (s.n ? " (" + s.n + ")" : ""),
          stroke: c, width: 1.25, spanGaps: false,
          dash: DASHES[Math.floor(i / PALETTE.length) % DASHES.length],
          value: legendValue,
          paths: asPoints ? function () { return null; } : undefined,
          points: {show: true, size: 3, width: 0, fill: c, filter: asPoints ? null : isolated}
        };
      })),
    plugins: [lanesPlugin(items, lanes)]
  };
  var chart = el("div");
  box.appendChild(chart);
  box.chart = new uPlot(opts, uPlot.join(tables), chart);  // for scripts that drive the chart
  window.addEventListener("resize", function () {
    box.chart.setSize({width: Math.max(300, box.clientWidth), height: opts.height});
  });
  return box;
}
