"""The HTML report of a comparison: one self-contained file, no network.

The page holds the summary table (with the recommended strategy, the as-run
row of billed usage and the strategies left out), a per-turn chart per strategy
of input tokens (per prompt or cumulative) or cumulative cost, for the mean over
the traces still running at each turn or for one trace, with the billed as-run line
where traces carry usage (the mean over the prompts with usage, beside
``full-history`` on those same prompts when only some carry it), the cached /
written / uncached shares, the facts
each strategy dropped, and, for a chosen trace and turn, the rendered prompts of
the strategies side by side, with the leading messages they all share folded.
CSS, JavaScript and the SVG charts are inline (the charts are drawn by
a small script in ``assets/report.js``); the data is one JSON document in the
page, with every distinct message text stored once.

The page grows with the number of traces, not with the text of their prompts:
totals and the "all traces" chart cover every trace, per-trace charts the first
:data:`MAX_CHART_TRACES`, and the rendered prompts a bounded sample of traces, named
on the page, holding at most :data:`MAX_PROMPT_CHARS` characters of distinct message
text (a trace that would pass the bound keeps the prompts of its first turns).
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from turnpress.compare.intervals import CONFIDENCE, Interval
from turnpress.compare.pricing import cost_usd
from turnpress.compare.results import ComparisonResult, StrategyResult
from turnpress.compare.table import format_cost, recall_text, sample_note, undecided_notes
from turnpress.core.compression import BASELINE_STRATEGY
from turnpress.core.errors import printable
from turnpress.core.tokens import message_body

__all__ = ["MAX_CHART_TRACES", "MAX_PROMPT_CHARS", "html_report", "report_data",
           "write_html_report"]

ASSETS = Path(__file__).resolve().parent / "assets"

MAX_CHART_TRACES = 100
"""Traces beyond this many are still in the totals and the "all traces" chart, but get
no chart of their own (the page stays small)."""

MAX_PROMPT_CHARS = 4_000_000
"""The rendered prompts in the page hold at most this many characters of distinct
message text (strategies that rewrite a message every turn make ~19x the run's text)."""

PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#be185d",
           "#4d7c0f", "#6b7280", "#b45309", "#1e3a8a", "#7c2d12"]


_KEYS = ("input", "cached", "written", "cost")


def _series(result: ComparisonResult) -> list[dict[str, Any]]:
    """Per-turn input / cached / written tokens and cost per strategy, plus the billed
    (as-run) prompt tokens and cost where turns carry usage: first the mean over the
    traces still running at each turn (no cliff where a shorter trace ends), then
    each trace (up to :data:`MAX_CHART_TRACES`).

    The billed values of a turn are the mean over the prompts of that turn that carry
    usage. Where those are not all the series' prompts (some runs, or some turns, have
    no usage), the series also has ``billed_runs`` (how many of its runs carry usage)
    and ``billed_ref`` / ``billed_ref_cost``: ``full-history``'s mean over the same
    prompts (None where ``full-history`` is not compared), the line the billed one is
    compared with, as the table's as-run ratio is. Where every prompt carries usage
    the series is as before (the billed line beside the means over every run)."""
    strategies = result.compared
    n_strategies = len(strategies)
    longest = max((t.turns for t in result.traces), default=0)
    total = {k: [[0.0] * longest for _ in range(n_strategies)] for k in _KEYS}
    running = [0] * longest
    billed_sum, billed_cost, billed_n = [0.0] * longest, [0.0] * longest, [0] * longest
    per_trace: list[dict[str, Any]] = []
    shown = min(len(result.traces), MAX_CHART_TRACES)
    price = result.price
    billed_rows = result.billed()
    row = next(billed_rows, None)
    for index, t in enumerate(result.traces):
        for turn in range(t.turns):
            running[turn] += 1
        billed: list[float | None] = [None] * t.turns
        costs: list[float | None] = [None] * t.turns
        while row is not None and row[0] == index:
            _, turn, prompt, cached = row
            c = cost_usd(price, prompt, cached)
            billed[turn] = prompt
            costs[turn] = c
            billed_sum[turn] += prompt
            billed_cost[turn] += c
            billed_n[turn] += 1
            row = next(billed_rows, None)
        if index < shown:
            has = any(b is not None for b in billed)
            per_trace.append({"name": t.name, "file": t.file, "line": t.line,
                              "turns": t.turns,
                              **{k: [[0] * t.turns for _ in range(n_strategies)]
                                 for k in _KEYS},
                              "billed": billed if has else None,
                              "billed_cost": costs if has else None})
            if has and None in billed:  # some turns of this trace carry no usage
                per_trace[-1].update(billed_runs=1, billed_ref=[None] * t.turns,
                                     billed_ref_cost=[None] * t.turns)
    for si, s in enumerate(strategies):
        for trace, turn, tokens, cached, written, _retention in s.rows():
            values = {"input": tokens, "cached": cached, "written": written,
                      "cost": round(cost_usd(price, tokens, cached, written), 9)}
            for k, v in values.items():
                total[k][si][turn - 1] += v
                if trace < shown:
                    per_trace[trace][k][si][turn - 1] = v
    mean = {k: [[round(v / running[i], 9 if k == "cost" else 2) if running[i] else 0
                 for i, v in enumerate(row)] for row in total[k]] for k in _KEYS}
    any_billed = any(billed_n)
    everything = {
        "name": (f"All {len(result.traces)} traces (mean over the traces still running)"
                 if len(result.traces) > 1 else "All traces"),
        "turns": longest, "running": running, **mean,
        "billed": [billed_sum[i] / billed_n[i] if billed_n[i] else None
                   for i in range(longest)] if any_billed else None,
        "billed_cost": [billed_cost[i] / billed_n[i] if billed_n[i] else None
                        for i in range(longest)] if any_billed else None,
    }
    if any_billed and billed_n != running:  # usage on some of the prompts only
        ref = _billed_reference(result, longest, per_trace)
        everything["billed_runs"] = sum(1 for t in result.traces if t.as_run is not None)
        everything["billed_ref"], everything["billed_ref_cost"] = (None, None) if ref is None \
            else ([round(v / n, d) if n else None for v, n in zip(sums, ref[2], strict=True)]
                  for sums, d in ((ref[0], 2), (ref[1], 9)))
    return [everything, *per_trace] if len(result.traces) > 1 else per_trace or [everything]


def _billed_reference(result: ComparisonResult, longest: int, per_trace: list[dict[str, Any]]
                      ) -> tuple[list[float], list[float], list[int]] | None:
    """``full-history``'s input tokens and cost summed, turn by turn, over the prompts
    that carry billed usage, and how many such prompts each turn has (None when
    ``full-history`` is not compared); fills the ``billed_ref`` of the per-trace series
    that have one. Its rows and the billed rows both come trace by trace, turn by turn."""
    base = next((s for s in result.compared if s.label == BASELINE_STRATEGY), None)
    if base is None:
        for series in per_trace:
            if "billed_ref" in series:
                series["billed_ref"] = series["billed_ref_cost"] = None
        return None
    tokens_sum, cost_sum, n = [0.0] * longest, [0.0] * longest, [0] * longest
    billed = result.billed()
    row = next(billed, None)
    for trace, turn, tokens, cached, written, _retention in base.rows():
        while row is not None and (row[0], row[1]) < (trace, turn - 1):
            row = next(billed, None)
        if row is None:
            break
        if (row[0], row[1]) != (trace, turn - 1):
            continue
        cost = round(cost_usd(result.price, tokens, cached, written), 9)
        tokens_sum[turn - 1] += tokens
        cost_sum[turn - 1] += cost
        n[turn - 1] += 1
        if trace < len(per_trace) and "billed_ref" in per_trace[trace]:
            per_trace[trace]["billed_ref"][turn - 1] = tokens
            per_trace[trace]["billed_ref_cost"][turn - 1] = cost
    return tokens_sum, cost_sum, n


def _strategy_data(s: StrategyResult, index: int) -> dict[str, Any]:
    return {
        "label": s.label,
        "name": s.name,
        "options": {k: repr(v) if not isinstance(v, (int, float, str, bool)) else v
                    for k, v in s.options.items()},
        "color": PALETTE[index % len(PALETTE)],
        "input_tokens": s.input_tokens,
        "cached_tokens": s.cached_tokens,
        "written_tokens": s.written_tokens,
        "savings": s.savings_vs_full_history,
        "cost_usd": s.cost_usd,
        "retention": s.retention,
        "needed_fact_recall": s.needed_fact_recall,
        "cost_ratio": s.cost_ratio,
        "dropped_facts": s.dropped_facts,
        "dropped": dict(s.dropped.most_common()),
        "dropped_examples": [{"trace": d.trace, "turn": d.turn, "fact": str(d.fact)}
                             for d in s.dropped_examples],
    }


def _prompt_data(result: ComparisonResult, budget: int
                 ) -> tuple[list[dict[str, Any]], list[str]]:
    """The kept prompts, trace by trace and turn by turn, while their distinct texts
    stay within ``budget`` characters: ``(prompts, texts)``; each entry has ``of``, its
    trace's number of turns (more than ``len(turns)`` when the bound cut it)."""
    texts: dict[str, int] = {}
    used = 0
    compared = [i for i, s in enumerate(result.strategies) if s.compared]
    prompts: list[dict[str, Any]] = []
    for kept in result.kept_prompts:
        turns: list[list[list[list[Any]]]] = []
        full = True
        for per_strategy in kept.prompts:
            fresh: dict[str, None] = {}
            for i in compared:
                for m in per_strategy[i]:
                    body = message_body(m)
                    if body not in texts:
                        fresh.setdefault(body, None)
            size = sum(len(t) for t in fresh)
            if used + size > budget:
                full = False
                break
            used += size
            for body in fresh:
                texts[body] = len(texts)
            turns.append([[[m["role"], texts[message_body(m)]] for m in per_strategy[i]]
                          for i in compared])
        if turns:
            prompts.append({"trace": kept.trace, "of": len(kept.prompts), "turns": turns,
                            "tokens": [[row[i] for i in compared]
                                       for row in kept.tokens[:len(turns)]]})
        if not full:
            break
    return prompts, list(texts)


def prompt_note(result: ComparisonResult, prompts: list[dict[str, Any]]) -> str:
    """The line that names the traces whose rendered prompts the page holds."""
    n = len(result.traces)
    if not prompts:
        return (f"This page holds no rendered prompts (of {n} trace{'s' * (n != 1)}); "
                f"write the report with turnpress compare --html to keep them.")
    named = ", ".join(p["trace"] + (f" (turns 1-{len(p['turns'])} of {p['of']})"
                                    if len(p["turns"]) < p["of"] else "")
                      for p in prompts)
    return (f"Rendered prompts of {len(prompts)} of {n} trace{'s' * (n != 1)}: {named}. "
            f"The other traces are in the totals and charts only (the page keeps at most "
            f"{MAX_PROMPT_CHARS:,} characters of prompt text).")


def report_data(result: ComparisonResult, *,
                max_prompt_chars: int = MAX_PROMPT_CHARS) -> dict[str, Any]:
    """The JSON document the page's script draws from (the rendered prompts bounded
    to ``max_prompt_chars`` characters of distinct text)."""
    prompts, texts = _prompt_data(result, max_prompt_chars)
    as_run = result.as_run
    return {
        "meta": {"tokenizer": result.tokenizer, "cache": result.cache,
                 "price": result.price.to_json(), "price_label": str(result.price),
                 "traces": len(result.traces), "prompts": result.prompts,
                 "min_recall": result.min_recall,
                 "as_run": as_run.to_json() if as_run else None,
                 "prompt_note": prompt_note(result, prompts)},
        "strategies": [_strategy_data(s, i) for i, s in enumerate(result.compared)],
        "series": _series(result),
        "texts": texts,
        "prompts": prompts,
    }


def _script_json(data: Any) -> str:
    """JSON safe to put inside a ``<script>`` element (and to write as UTF-8)."""
    text = printable(json.dumps(data, ensure_ascii=False, separators=(",", ":")))
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(ASSETS)), autoescape=True,
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def html_report(result: ComparisonResult, *, title: str = "turnpress compare") -> str:
    """The report as one self-contained HTML page (text UTF-8 can encode: a lone
    surrogate in a trace is written as its ``\\udXXX`` escape)."""
    env = _environment()
    best = result.recommended
    data = report_data(result)
    ci = result.intervals()
    rows = [
        {"label": s.label, "color": PALETTE[i % len(PALETTE)], "tokens": f"{s.input_tokens:,}",
         "saved": "baseline" if s.label == BASELINE_STRATEGY
         else f"{s.savings_vs_full_history * 100:.1f}%",
         "cached": f"{s.cached_share * 100:.1f}%", "written": f"{s.written_tokens:,}",
         "cost": format_cost(s.cost_usd), "ratio": f"{s.cost_ratio:.2f}x",
         "retention": f"{s.retention:.3f}", "recall": recall_text(s, 3),
         "ratio_ci": _span(ci[s.label]["cost_ratio"], 2),
         "recall_ci": _span(ci[s.label]["needed_fact_recall"], 3),
         "recommended": s is best, "dropped_facts": s.dropped_facts,
         "dropped": ", ".join(f"{k} ×{n}" for k, n in s.dropped.most_common()) or "–"}
        for i, s in enumerate(result.compared)
    ]
    as_run = result.as_run
    as_run_row = None if as_run is None else {
        "tokens": f"{as_run.prompt_tokens:,}", "cached": f"{as_run.cached_share * 100:.1f}%",
        "written": f"{as_run.cache_write_tokens:,}", "cost": format_cost(as_run.cost_usd),
        "ratio": "–" if as_run.cost_ratio is None else f"{as_run.cost_ratio:.2f}x",
        "prompts": as_run.prompts}
    return printable(env.get_template("report.html.j2").render(
        title=title,
        result=result,
        rows=rows,
        as_run=as_run_row,
        recommended=best,
        not_compared=result.not_compared,
        anthropic=result.cache == "anthropic",
        css=(ASSETS / "report.css").read_text(encoding="utf-8"),
        script=(ASSETS / "report.js").read_text(encoding="utf-8"),
        data=_script_json(data),
        prompt_note=data["meta"]["prompt_note"],
        # the terminal footer's own lines on a withheld or undecided recommendation
        undecided=[_sentence(line) for line in undecided_notes(result)],
        confidence=f"{CONFIDENCE * 100:g}%",
        sample=_sentence(sample_note(result)),
    ))


def _sentence(line: str | None) -> str | None:
    """A footer line of the terminal as a paragraph of the page: its first letter upper."""
    return None if line is None else line[:1].upper() + line[1:]


def _span(interval: Interval, decimals: int) -> str:
    """``low–high`` when the interval is wider than ``decimals`` decimals, else ``""``."""
    if not interval.wider_than(decimals):
        return ""
    return f"{interval.low:.{decimals}f}–{interval.high:.{decimals}f}"


def write_html_report(result: ComparisonResult, path: str | os.PathLike[str], *,
                      title: str = "turnpress compare") -> Path:
    """Write :func:`html_report` to ``path`` (UTF-8) and return the path."""
    out = Path(path)
    out.write_text(html_report(result, title=title), encoding="utf-8")
    return out
