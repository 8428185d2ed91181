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

  function cumulate(row) {
    var sum = 0;
    return row.map(function (v) {
      if (v === null) return null;
      sum += v;
      return sum;
    });
  }

  function values(series, index) {
    if (state.mode === "cost") return cumulate(series.cost[index]);
    var row = series.input[index];
    return state.mode === "cumulative" ? cumulate(row) : row.slice();
  }

  // The billed (as-run) values of the series, or null when no turn carries usage; with
  // `ref`, full-history's on the same prompts (only where some prompts carry no usage).
  function billedValues(series, ref) {
    var row = ref ? (state.mode === "cost" ? series.billed_ref_cost : series.billed_ref)
      : (state.mode === "cost" ? series.billed_cost : series.billed);
    if (!row) return null;
    return state.mode === "prompt" ? row.slice() : cumulate(row);
  }

  // What the billed line covers, when it is not every prompt of the series.
  function billedNote(series) {
    var n = data.meta.traces;
    var what = series.running ? "mean over the " + series.billed_runs + " of " + n + " run" +
      (n === 1 ? "" : "s") + " with usage" : "the turns with usage only";
    return "as run (billed): " + what + "; " + (series.billed_ref
      ? "dotted: full-history on the same prompts"
      : "full-history is not compared, so no line on the same prompts");
  }

  function fmtValue(v) {
    if (state.mode !== "cost") return fmt(v);
    if (v === 0) return "$0";
    return "$" + (v < 0.01 ? v.toFixed(5) : v < 1 ? v.toFixed(3) : v.toFixed(2));
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
    var billed = billedValues(series);
    var ref = billedValues(series, true);
    var max = 0;
    lines.forEach(function (row, i) {
      if (!visible[i]) return;
      row.forEach(function (v) { if (v > max) max = v; });
    });
    [billed, ref].forEach(function (row) {
      if (row && showBilled) row.forEach(function (v) { if (v !== null && v > max) max = v; });
    });
    if (max <= 0) max = 1;
    var step = niceStep(max, 5);
    var top = Math.ceil(max / step) * step;
    var x = function (t) { return m.l + (turns === 1 ? pw / 2 : (t - 1) / (turns - 1) * pw); };
    var y = function (v) { return m.t + ph - v / top * ph; };

    for (var v = 0; v <= top + 1e-9; v += step) {
      chart.appendChild(svg("line", { x1: m.l, x2: W - m.r, y1: y(v), y2: y(v),
        "class": v === 0 ? "axis" : "grid" }));
      chart.appendChild(svg("text", { x: m.l - 8, y: y(v) + 4, "text-anchor": "end" },
        fmtValue(v)));
    }
    var every = Math.max(1, Math.ceil(turns / 20));
    for (var t = 1; t <= turns; t++) {
      // every `every` turns, and the last turn (a regular label too close to it is left out)
      if (t !== turns && ((t - 1) % every !== 0 || turns - t < every * 0.6)) continue;
      chart.appendChild(svg("text", { x: x(t), y: H - m.b + 18, "text-anchor": "middle" }, t));
    }
    chart.appendChild(svg("text", { x: m.l + pw / 2, y: H - 6, "text-anchor": "middle",
      "class": "label" }, "turn"));
    chart.appendChild(svg("text", { x: 14, y: m.t + ph / 2, "text-anchor": "middle",
      transform: "rotate(-90 14 " + (m.t + ph / 2) + ")", "class": "label" },
      state.mode === "cost" ? "cumulative cost (USD)" :
        state.mode === "cumulative" ? "cumulative input tokens" : "input tokens per prompt"));

    lines.forEach(function (row, i) {
      if (!visible[i]) return;
      var s = strategies[i];
      var points = row.map(function (v, k) { return x(k + 1) + "," + y(v); }).join(" ");
      chart.appendChild(svg("polyline", { points: points, fill: "none", stroke: s.color,
        "stroke-width": 2.2, "stroke-linejoin": "round", "data-strategy": s.label }));
      row.forEach(function (v, k) {
        var dot = svg("circle", { cx: x(k + 1), cy: y(v), r: 3.2, fill: s.color });
        dot.appendChild(svg("title", {}, s.label + ", turn " + (k + 1) + ": " + fmtValue(v) +
          (state.mode === "cost" ? " so far" : " tokens" +
            (state.mode === "cumulative" ? " so far" : ""))));
        chart.appendChild(dot);
      });
    });
    if (billed && showBilled) {
      var note = series.billed_runs ? billedNote(series) : null;
      var base = strategies.filter(function (s) { return s.label === "full-history"; })[0];
      var drawn = [[billed, "as-run-line", "#111827", "6 4", "as run (billed)",
        "as run: what the provider billed (its own tokenizer)" + (note ? "; " + note : "")]];
      if (ref) {
        drawn.push([ref, "as-run-reference", base.color, "2 3",
          "full-history on the billed prompts",
          "full-history on the same prompts as the as-run line"]);
      }
      drawn.forEach(function (d) {
        var pts = [];
        d[0].forEach(function (v, k) { if (v !== null) pts.push(x(k + 1) + "," + y(v)); });
        var line = svg("polyline", { id: d[1], points: pts.join(" "), fill: "none",
          stroke: d[2], "stroke-width": 2, "stroke-dasharray": d[3], "data-strategy": d[4] });
        line.appendChild(svg("title", {}, d[5]));
        chart.appendChild(line);
      });
      if (note) {
        chart.appendChild(svg("text", { id: "as-run-note", x: m.l + 8, y: m.t + 12,
          "class": "label" }, note));
      }
    }
  }

  var showBilled = true;

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
    if (data.meta.as_run) {
      var b = html("button", { type: "button", "aria-pressed": String(showBilled),
        id: "as-run-key", title: "show or hide what the provider billed" });
      b.appendChild(html("span", { "class": "as-run-key" }));
      var some = data.series.length && data.series[0].running && data.series[0].billed_runs;
      b.appendChild(document.createTextNode("as run (billed" + (some ? ", " + some + " of " +
        data.meta.traces + " runs" : "") + ")"));
      b.addEventListener("click", function () {
        showBilled = !showBilled;
        b.setAttribute("aria-pressed", String(showBilled));
        drawTokens();
      });
      legend.appendChild(b);
    }
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
    // every trace: the totals of the table above; one trace: that trace's sums
    var totals = !series || series.running !== undefined;
    document.getElementById("cache-scope").textContent = totals
      ? "Totals over all " + fmt(data.meta.traces) + " trace" +
        (data.meta.traces === 1 ? "" : "s") + ", as in the table above."
      : "Trace " + series.name + " only (pick the trace above the chart of input tokens).";
    strategies.forEach(function (s, i) {
      var sum = function (key) {
        return series ? series[key][i].reduce(function (a, b) { return a + b; }, 0) : 0;
      };
      var input = totals ? s.input_tokens : sum("input");
      var cached = totals ? s.cached_tokens : sum("cached");
      var written = totals ? s.written_tokens : sum("written");
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
    var old = document.getElementById("common-messages");
    if (old) old.parentNode.removeChild(old);
    var kept = data.prompts[Number(document.getElementById("prompt-trace").value)];
    if (!kept || !kept.turns.length) {
      box.appendChild(html("p", { "class": "empty" }, "No rendered prompts in this report."));
      return;
    }
    var turn = Number(document.getElementById("prompt-turn").value) || kept.turns.length;
    var columns = [];
    strategies.forEach(function (s, i) { if (chosen[i]) columns.push(kept.turns[turn - 1][i]); });
    // the leading messages every shown column has in common are folded into one block
    var common = 0;
    if (columns.length > 1) {
      var shortest = Math.min.apply(null, columns.map(function (c) { return c.length; }));
      while (common < shortest && columns.every(function (c) {
        return c[common][0] === columns[0][common][0] && c[common][1] === columns[0][common][1];
      })) common++;
    }
    if (common) {
      var shared = html("details", { "class": "common", id: "common-messages" });
      var chars = 0;
      for (var k = 0; k < common; k++) chars += (data.texts[columns[0][k][1]] || "").length;
      shared.appendChild(html("summary", {}, common + " leading message" +
        (common === 1 ? "" : "s") + " common to all " + columns.length + " columns (" +
        fmt(chars) + " characters), folded; what differs is shown below"));
      var wrap = html("div", { "class": "prompt" });
      for (var j = 0; j < common; j++) {
        var block0 = html("div", { "class": "message" });
        block0.appendChild(html("div", { "class": "role" }, columns[0][j][0]));
        var text0 = data.texts[columns[0][j][1]];
        block0.appendChild(html("pre", text0 ? {} : { "class": "empty" }, text0 || "(empty)"));
        wrap.appendChild(block0);
      }
      shared.appendChild(wrap);
      box.parentNode.insertBefore(shared, box);
    }
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
      if (common) {
        column.appendChild(html("p", { "class": "folded" }, "(" + common + " common message" +
          (common === 1 ? "" : "s") + " folded above)"));
      }
      kept.turns[turn - 1][i].slice(common).forEach(function (message) {
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
      var cut = p.turns.length < p.of ? " (turns 1-" + p.turns.length + " of " + p.of + ")" : "";
      traceSelect.appendChild(html("option", { value: i }, p.trace + cut));
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
      var where = s.file ? s.file + (s.line ? ": line " + s.line : "") + ", " : "";
      select.appendChild(html("option", { value: i }, s.name + " (" + where + s.turns + " turns)"));
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
