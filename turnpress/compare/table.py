"""The terminal view of a comparison: a rich table, then the facts each strategy dropped."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from turnpress.compare.engine import ComparisonResult, StrategyResult
from turnpress.core.compression import BASELINE_STRATEGY

__all__ = ["comparison_table", "dropped_summary", "format_cost", "print_comparison"]


def format_cost(usd: float) -> str:
    """``$0.0235``: four decimals, more for tiny amounts, thousands separators for big."""
    if usd == 0:
        return "$0"
    if abs(usd) < 0.001:
        return f"${usd:.6f}"
    return f"${usd:,.4f}"


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def _is_baseline(s: StrategyResult) -> bool:
    return s.label == BASELINE_STRATEGY


def _dropped_cell(s: StrategyResult) -> str:
    if not s.dropped:
        return "-"
    return ", ".join(f"{kind} x{n}" for kind, n in s.dropped.most_common())


def comparison_table(result: ComparisonResult) -> Table:
    """The summary table: one row per strategy, totals over every prompt of every trace."""
    prompts = result.prompts
    n = len(result.traces)
    anthropic = result.cache == "anthropic"
    dropped = any(s.dropped for s in result.strategies)
    notes = ["saved: input tokens saved vs full-history", "cached: share of input tokens "
             "read from the prompt cache"]
    if anthropic:
        notes.append("written: tokens written to the cache (billed at the write price)")
    notes.append("retained: mean share of the history's facts the prompt keeps (retention)")
    table = Table(
        title=f"turnpress compare: {n} trace{'s' * (n != 1)}, {prompts} prompt"
              f"{'s' * (prompts != 1)} per strategy",
        caption=f"tokenizer {result.tokenizer} · cache {result.cache} · price {result.price} "
                f"USD per million tokens\n" + "\n".join(notes),
        caption_justify="left",
        show_edge=False,
        pad_edge=False,
    )
    table.add_column("strategy", no_wrap=True)
    table.add_column("tokens", justify="right", no_wrap=True)
    table.add_column("saved", justify="right", no_wrap=True)
    table.add_column("cached", justify="right", no_wrap=True)
    if anthropic:
        table.add_column("written", justify="right", no_wrap=True)
    table.add_column("cost", justify="right", no_wrap=True)
    table.add_column("retained", justify="right", no_wrap=True)
    if dropped:
        table.add_column("dropped", overflow="fold")
    best = min((s.cost_usd for s in result.strategies), default=None)
    for s in result.strategies:
        saved = "-" if _is_baseline(s) else _pct(s.savings_vs_full_history)
        cost = Text(format_cost(s.cost_usd))
        if best is not None and s.cost_usd == best and len(result.strategies) > 1:
            cost.stylize("bold green")
        row = [s.label, f"{s.input_tokens:,}", saved, _pct(s.cached_share)]
        if anthropic:
            row.append(f"{s.written_tokens:,}")
        row += [cost, f"{s.retention:.3f}"]
        if dropped:
            row.append(_dropped_cell(s))
        table.add_row(*row)
    return table


def dropped_summary(result: ComparisonResult, examples: int = 3) -> list[str]:
    """One line per strategy that dropped facts, with the first ``examples`` of them."""
    lines = []
    for s in result.strategies:
        if not s.dropped_examples:
            continue
        shown = "; ".join(f"{d.fact} ({d.trace}, turn {d.turn})"
                          for d in s.dropped_examples[:examples])
        more = sum(s.dropped.values()) - min(examples, len(s.dropped_examples))
        lines.append(f"{s.label} dropped: {shown}" + (f"; and {more} more" if more > 0 else ""))
    return lines


def print_comparison(result: ComparisonResult, console: Console | None = None,
                     *, examples: int = 3) -> None:
    """Print the table and the dropped-facts lines."""
    console = console or Console()
    parts: list[RenderableType] = [comparison_table(result)]
    notes: Sequence[str] = dropped_summary(result, examples)
    parts.extend(Text(line) for line in notes)
    console.print(Group(*parts))
