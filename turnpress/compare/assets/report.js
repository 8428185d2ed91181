// The turnpress compare report: draws the charts and the side-by-side prompts from
// the JSON document in #report-data. Plain DOM and SVG, no library, no network.
(function () {
  "use strict";

  var data = JSON.parse(document.getElementById("report-data").textContent);
  var strategies = data.strategies;
  var SVG_NS = "http://www.w3.org/2000/svg";
  var visible = strategies.map(function () { return true; });
  var state = { series: 0, mode: "prompt" };

  function svg(tag, attrs, text) {
    var node = document.createElementNS(SVG_NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function html(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function fmt(n) {
    return Math.round(n).toLocaleString("en-US");
  }

  function niceStep(max, ticks) {
    var raw = max / ticks;
    var power = Math.pow(10, Math.floor(Math.log10(raw)));
    var steps = [1, 2, 2.5, 5, 10];
    for (var i = 0; i < steps.length; i++) {
      if (steps[i] * power >= raw) return steps[i] * power;
    }
    return 10 * power;
  }

  function values(series, index) {
    var row = series.input[index];
    if (state.mode !== "cumulative") return row.slice();
    var sum = 0;
    return row.map(function (v) { sum += v; return sum; });
  }

  // -- the per-turn token chart ----------------------------------------------------

  function drawTokens() {
    var chart = document.getElementById("tokens-chart");
    clear(chart);
    var series = data.series[state.series];
    var W = 900, H = 380, m = { l: 70, r: 24, t: 16, b: 44 };
    var pw = W - m.l - m.r, ph = H - m.t - m.b;
    var turns = series ? series.turns : 0;
    if (!turns) {
      chart.appendChild(svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle" },
        "no prompts to show"));
      return;
    }
    var lines = strategies.map(function (s, i) { return values(series, i); });
    var max = 0;
    lines.forEach(function (row, i) {
      if (!visible[i]) return;
      row.forEach(function (v) { if (v > max) max = v; });
    });
    if (max <= 0) max = 1;
    var step = niceStep(max, 5);
    var top = Math.ceil(max / step) * step;
    var x = function (t) { return m.l + (turns === 1 ? pw / 2 : (t - 1) / (turns - 1) * pw); };
    var y = function (v) { return m.t + ph - v / top * ph; };

    for (var v = 0; v <= top + 1e-9; v += step) {
      chart.appendChild(svg("line", { x1: m.l, x2: W - m.r, y1: y(v), y2: y(v),
        "class": v === 0 ? "axis" : "grid" }));
      chart.appendChild(svg("text", { x: m.l - 8, y: y(v) + 4, "text-anchor": "end" }, fmt(v)));
    }
    var every = Math.max(1, Math.ceil(turns / 20));
    for (var t = 1; t <= turns; t++) {
      if ((t - 1) % every !== 0 && t !== turns) continue;
      chart.appendChild(svg("text", { x: x(t), y: H - m.b + 18, "text-anchor": "middle" }, t));
    }
    chart.appendChild(svg("text", { x: m.l + pw / 2, y: H - 6, "text-anchor": "middle",
      "class": "label" }, "turn"));
    chart.appendChild(svg("text", { x: 14, y: m.t + ph / 2, "text-anchor": "middle",
      transform: "rotate(-90 14 " + (m.t + ph / 2) + ")", "class": "label" },
      state.mode === "cumulative" ? "cumulative input tokens" : "input tokens per prompt"));

    lines.forEach(function (row, i) {
      if (!visible[i]) return;
      var s = strategies[i];
      var points = row.map(function (v, k) { return x(k + 1) + "," + y(v); }).join(" ");
      chart.appendChild(svg("polyline", { points: points, fill: "none", stroke: s.color,
        "stroke-width": 2.2, "stroke-linejoin": "round", "data-strategy": s.label }));
      row.forEach(function (v, k) {
        var dot = svg("circle", { cx: x(k + 1), cy: y(v), r: 3.2, fill: s.color });
        dot.appendChild(svg("title", {}, s.label + ", turn " + (k + 1) + ": " + fmt(v) +
          " tokens" + (state.mode === "cumulative" ? " so far" : "")));
        chart.appendChild(dot);
      });
    });
  }

  function buildLegend() {
    var legend = document.getElementById("legend");
    clear(legend);
    strategies.forEach(function (s, i) {
      var button = html("button", { type: "button", "aria-pressed": String(visible[i]),
        title: "show or hide " + s.label });
      var swatch = html("span", { "class": "swatch" });
      swatch.style.background = s.color;
      button.appendChild(swatch);
      button.appendChild(document.createTextNode(s.label));
      button.addEventListener("click", function () {
        visible[i] = !visible[i];
        button.setAttribute("aria-pressed", String(visible[i]));
        drawTokens();
      });
      legend.appendChild(button);
    });
  }

  // -- cached / written / uncached shares ------------------------------------------

  function drawCache() {
    var chart = document.getElementById("cache-chart");
    clear(chart);
    var series = data.series[state.series];
    var rowH = 28, m = { l: 190, r: 190, t: 10, b: 10 }, W = 900;
    var H = m.t + m.b + rowH * Math.max(strategies.length, 1);
    chart.setAttribute("viewBox", "0 0 " + W + " " + H);
    var pw = W - m.l - m.r;
    strategies.forEach(function (s, i) {
      var sum = function (key) {
        return series ? series[key][i].reduce(function (a, b) { return a + b; }, 0) : 0;
      };
      var input = sum("input"), cached = sum("cached"), written = sum("written");
      var parts = [["cached", cached, "var(--cached)"], ["written", written, "var(--written)"],
        ["uncached", Math.max(0, input - cached - written), "var(--uncached)"]];
      var y0 = m.t + i * rowH;
      chart.appendChild(svg("text", { x: m.l - 10, y: y0 + rowH / 2 + 4, "text-anchor": "end",
        "class": "label" }, s.label));
      var x0 = m.l;
      parts.forEach(function (p) {
        if (!input || !p[1]) return;
        var w = p[1] / input * pw;
        var rect = svg("rect", { x: x0, y: y0 + 5, width: w, height: rowH - 10,
          style: "fill: " + p[2] });
        rect.appendChild(svg("title", {}, s.label + ": " + fmt(p[1]) + " " + p[0] +
          " tokens (" + (p[1] / input * 100).toFixed(1) + "%)"));
        chart.appendChild(rect);
        x0 += w;
      });
      var share = input ? (cached / input * 100).toFixed(1) + "% cached" : "no prompts";
      chart.appendChild(svg("text", { x: W - m.r + 10, y: y0 + rowH / 2 + 4 },
        fmt(input) + " · " + share));
    });
  }

  // -- prompts side by side ----------------------------------------------------------

  var chosen = strategies.map(function () { return true; });

  function fillTurns() {
    var select = document.getElementById("prompt-turn");
    clear(select);
    var kept = data.prompts[Number(document.getElementById("prompt-trace").value)];
    var n = kept ? kept.turns.length : 0;
    for (var t = 1; t <= n; t++) select.appendChild(html("option", { value: t }, String(t)));
    if (n) select.value = String(n);
  }

  function drawPrompts() {
    var box = document.getElementById("prompts");
    clear(box);
    var kept = data.prompts[Number(document.getElementById("prompt-trace").value)];
    if (!kept || !kept.turns.length) {
      box.appendChild(html("p", { "class": "empty" }, "No rendered prompts in this report."));
      return;
    }
    var turn = Number(document.getElementById("prompt-turn").value) || kept.turns.length;
    strategies.forEach(function (s, i) {
      if (!chosen[i]) return;
      var column = html("article", { "class": "prompt", "data-strategy": s.label });
      var title = html("h3");
      var name = html("span");
      var swatch = html("span", { "class": "swatch" });
      swatch.style.background = s.color;
      name.appendChild(swatch);
      name.appendChild(document.createTextNode(s.label));
      title.appendChild(name);
      title.appendChild(html("small", {}, fmt(kept.tokens[turn - 1][i]) + " tokens"));
      column.appendChild(title);
      kept.turns[turn - 1][i].forEach(function (message) {
        var block = html("div", { "class": "message" });
        block.appendChild(html("div", { "class": "role" }, message[0]));
        var text = data.texts[message[1]];
        block.appendChild(html("pre", text ? {} : { "class": "empty" }, text || "(empty)"));
        column.appendChild(block);
      });
      box.appendChild(column);
    });
  }

  function setupPrompts() {
    var traceSelect = document.getElementById("prompt-trace");
    data.prompts.forEach(function (p, i) {
      traceSelect.appendChild(html("option", { value: i }, p.trace));
    });
    var checks = document.getElementById("prompt-strategies");
    strategies.forEach(function (s, i) {
      var label = html("label");
      var box = html("input", { type: "checkbox" });
      box.checked = chosen[i];
      box.addEventListener("change", function () { chosen[i] = box.checked; drawPrompts(); });
      label.appendChild(box);
      label.appendChild(document.createTextNode(" " + s.label));
      checks.appendChild(label);
    });
    traceSelect.addEventListener("change", function () { fillTurns(); drawPrompts(); });
    document.getElementById("prompt-turn").addEventListener("change", drawPrompts);
    fillTurns();
    drawPrompts();
  }

  // -- wiring ------------------------------------------------------------------------

  function setupSeries() {
    var select = document.getElementById("series-select");
    data.series.forEach(function (s, i) {
      select.appendChild(html("option", { value: i }, s.name + " (" + s.turns + " turns)"));
    });
    select.addEventListener("change", function () {
      state.series = Number(select.value);
      drawTokens();
      drawCache();
    });
    document.querySelectorAll("input[name=mode]").forEach(function (radio) {
      radio.addEventListener("change", function () {
        if (radio.checked) { state.mode = radio.value; drawTokens(); }
      });
    });
  }

  setupSeries();
  buildLegend();
  drawTokens();
  drawCache();
  setupPrompts();
})();
