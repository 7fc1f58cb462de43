/* Small canvas plotting for the report: axes, fault bands, points or lines, legend.
   Hand-written so the page needs nothing from the network. */
"use strict";
var PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
               "#17becf", "#bcbd22", "#7f7f7f"];
var BAND_COLORS = {partition: "#e9dca0", kill: "#e9a4a0", pause: "#a0b1e9", clock: "#a0e9e3",
                   disk: "#d0a0e9", other: "#cccccc"};

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

/* plot(container, {title, series: [{name, x, y}], bands, mode: "points"|"lines", xlabel,
   ylabel, logy, xmax}) draws one plot and returns its canvas. */
function plot(container, spec) {
  var box = el("div", {"class": "plot"});
  if (spec.title) box.appendChild(el("h3", {}, spec.title));
  var W = 1100, H = 300, L = 64, R = 12, T = 10, B = 40;
  var cv = el("canvas", {width: W, height: H});
  box.appendChild(cv);
  container.appendChild(box);
  var series = spec.series || [], bands = spec.bands || [];
  var xmin = 0, xmax = spec.xmax || 0, ymin = Infinity, ymax = -Infinity, points = 0;
  series.forEach(function (s) {
    for (var i = 0; i < s.x.length; i++) {
      var y = s.y[i];
      if (spec.logy && !(y > 0)) continue;
      xmax = Math.max(xmax, s.x[i]); ymin = Math.min(ymin, y); ymax = Math.max(ymax, y);
      points++;
    }
  });
  cv.dataset.points = points;
  var ctx = cv.getContext("2d");
  ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, W, H);
  if (!points) {
    ctx.fillStyle = "#666"; ctx.font = "13px sans-serif";
    ctx.fillText(spec.empty || "no data", L + 10, T + 24);
    return cv;
  }
  if (xmax <= xmin) xmax = xmin + 1;
  if (!spec.logy) ymin = Math.min(0, ymin);
  if (ymax <= ymin) ymax = ymin + 1;
  var ly = function (v) { return spec.logy ? Math.log10(v) : v; };
  var y0 = ly(ymin), y1 = ly(ymax);
  var sx = function (x) { return L + (x - xmin) / (xmax - xmin) * (W - L - R); };
  var sy = function (y) { return H - B - (ly(y) - y0) / (y1 - y0 || 1) * (H - T - B); };
  bands.forEach(function (b) {
    var end = b.end === null ? xmax : b.end;
    ctx.fillStyle = BAND_COLORS[b.kind] || BAND_COLORS.other;
    ctx.globalAlpha = 0.6;
    ctx.fillRect(sx(b.start), T, Math.max(1, sx(end) - sx(b.start)), H - T - B);
    ctx.globalAlpha = 1;
  });
  ctx.strokeStyle = "#999"; ctx.fillStyle = "#333"; ctx.font = "11px sans-serif";
  ctx.beginPath(); ctx.moveTo(L, T); ctx.lineTo(L, H - B); ctx.lineTo(W - R, H - B); ctx.stroke();
  niceTicks(xmin, xmax, 10).forEach(function (v) {
    ctx.fillText(fmt(v), sx(v) - 8, H - B + 14);
  });
  var yt = spec.logy ? niceTicks(y0, y1, 5).map(function (e) { return Math.pow(10, e); })
                     : niceTicks(ymin, ymax, 5);
  yt.forEach(function (v) {
    ctx.fillText(fmt(v), 4, sy(v) + 4);
    ctx.strokeStyle = "#eee"; ctx.beginPath(); ctx.moveTo(L, sy(v)); ctx.lineTo(W - R, sy(v));
    ctx.stroke();
  });
  ctx.fillStyle = "#333";
  ctx.fillText(spec.xlabel || "", W / 2, H - 6);
  ctx.save(); ctx.translate(12, T + (H - T - B) / 2 + 30); ctx.rotate(-Math.PI / 2);
  ctx.fillText(spec.ylabel || "", 0, 0); ctx.restore();
  series.forEach(function (s, si) {
    var c = PALETTE[si % PALETTE.length];
    ctx.strokeStyle = c; ctx.fillStyle = c;
    if (spec.mode === "lines") ctx.beginPath();
    var started = false;
    for (var i = 0; i < s.x.length; i++) {
      if (spec.logy && !(s.y[i] > 0)) continue;
      var px = sx(s.x[i]), py = sy(s.y[i]);
      if (spec.mode === "lines") {
        if (started) ctx.lineTo(px, py); else ctx.moveTo(px, py);
        started = true;
      } else ctx.fillRect(px - 1, py - 1, 3, 3);
    }
    if (spec.mode === "lines") ctx.stroke();
  });
  var legend = el("div", {"class": "legend"});
  series.forEach(function (s, si) {
    var sp = el("span"), sw = el("i");
    sw.style.background = PALETTE[si % PALETTE.length];
    sp.appendChild(sw); sp.appendChild(document.createTextNode(s.name + (s.n ? " (" + s.n + ")" : "")));
    legend.appendChild(sp);
  });
  var kinds = {};
  bands.forEach(function (b) { kinds[b.kind] = true; });
  Object.keys(kinds).forEach(function (k) {
    var sp = el("span"), sw = el("i");
    sw.style.background = BAND_COLORS[k] || BAND_COLORS.other;
    sp.appendChild(sw); sp.appendChild(document.createTextNode("fault: " + k));
    legend.appendChild(sp);
  });
  box.appendChild(legend);
  return cv;
}
