"""The HTML report of a comparison: one self-contained file, no network.

The page holds the summary table, a per-turn chart of input tokens per strategy
(per prompt or cumulative, for all traces summed by turn number or for one
trace), the cached / written / uncached shares, the facts each strategy dropped,
and, for a chosen trace and turn, the rendered prompts of the strategies side
by side. CSS, JavaScript and the SVG charts are inline (the charts are drawn by
a small script in ``assets/report.js``); the data is one JSON document in the
page, with every distinct message text stored once.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from turnpress.compare.engine import ComparisonResult, StrategyResult
from turnpress.compare.table import format_cost

__all__ = ["MAX_CHART_TRACES", "html_report", "report_data", "write_html_report"]

ASSETS = Path(__file__).resolve().parent / "assets"

MAX_CHART_TRACES = 200
"""Traces beyond this many are still in the totals and the "all traces" chart, but get
no chart of their own (the page stays small)."""

PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#be185d",
           "#4d7c0f", "#6b7280", "#b45309", "#1e3a8a", "#7c2d12"]


def _series(result: ComparisonResult) -> list[dict[str, Any]]:
    """Per-turn input / cached / written tokens per strategy: all traces summed by turn
    number first, then each trace (up to :data:`MAX_CHART_TRACES`)."""
    n_strategies = len(result.strategies)
    longest = max((t.turns for t in result.traces), default=0)
    total = {k: [[0] * longest for _ in range(n_strategies)]
             for k in ("input", "cached", "written")}
    per_trace: list[dict[str, Any]] = []
    shown = min(len(result.traces), MAX_CHART_TRACES)
    for t in result.traces[:shown]:
        per_trace.append({"name": t.name, "turns": t.turns,
                          **{k: [[0] * t.turns for _ in range(n_strategies)]
                             for k in ("input", "cached", "written")}})
    for si, s in enumerate(result.strategies):
        for trace, turn, tokens, cached, written, _retention in s.rows():
            values = {"input": tokens, "cached": cached, "written": written}
            for k, v in values.items():
                total[k][si][turn - 1] += v
                if trace < shown:
                    per_trace[trace][k][si][turn - 1] = v
    everything = {"name": f"All {len(result.traces)} traces (summed by turn number)"
                  if len(result.traces) > 1 else "All traces", "turns": longest, **total}
    return [everything, *per_trace] if len(result.traces) > 1 else per_trace or [everything]


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
        "dropped": dict(s.dropped.most_common()),
        "dropped_examples": [{"trace": d.trace, "turn": d.turn, "fact": str(d.fact)}
                             for d in s.dropped_examples],
    }


def report_data(result: ComparisonResult) -> dict[str, Any]:
    """The JSON document the page's script draws from."""
    texts: dict[str, int] = {}

    def text_id(text: str) -> int:
        return texts.setdefault(text, len(texts))

    prompts = []
    for kept in result.kept_prompts:
        prompts.append({
            "trace": kept.trace,
            "turns": [[[[m["role"], text_id(m["content"])] for m in messages]
                       for messages in per_strategy] for per_strategy in kept.prompts],
            "tokens": kept.tokens,
        })
    return {
        "meta": {"tokenizer": result.tokenizer, "cache": result.cache,
                 "price": result.price.to_json(), "price_label": str(result.price),
                 "traces": len(result.traces), "prompts": result.prompts},
        "strategies": [_strategy_data(s, i) for i, s in enumerate(result.strategies)],
        "series": _series(result),
        "texts": list(texts),
        "prompts": prompts,
    }


def _script_json(data: Any) -> str:
    """JSON safe to put inside a ``<script>`` element."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(ASSETS)), autoescape=True,
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def html_report(result: ComparisonResult, *, title: str = "turnpress compare") -> str:
    """The report as one self-contained HTML page."""
    env = _environment()
    rows = [
        {"label": s.label, "color": PALETTE[i % len(PALETTE)], "tokens": f"{s.input_tokens:,}",
         "saved": "baseline" if s.label == "full-history"
         else f"{s.savings_vs_full_history * 100:.1f}%",
         "cached": f"{s.cached_share * 100:.1f}%", "written": f"{s.written_tokens:,}",
         "cost": format_cost(s.cost_usd), "retention": f"{s.retention:.3f}",
         "dropped": ", ".join(f"{k} ×{n}" for k, n in s.dropped.most_common()) or "–"}
        for i, s in enumerate(result.strategies)
    ]
    return env.get_template("report.html.j2").render(
        title=title,
        result=result,
        rows=rows,
        anthropic=result.cache == "anthropic",
        css=(ASSETS / "report.css").read_text(encoding="utf-8"),
        script=(ASSETS / "report.js").read_text(encoding="utf-8"),
        data=_script_json(report_data(result)),
    )


def write_html_report(result: ComparisonResult, path: str | os.PathLike[str], *,
                      title: str = "turnpress compare") -> Path:
    """Write :func:`html_report` to ``path`` (UTF-8) and return the path."""
    out = Path(path)
    out.write_text(html_report(result, title=title), encoding="utf-8")
    return out
