"""The terminal view of a comparison: a table that fits 80 columns, or plain lines.

In a terminal the table is drawn by rich with short headers and compact
numbers (``4.71M``, ``$0.0235``) that are never cut: only the strategy column
may fold. When stdout is not a terminal (a pipe, a file), :func:`plain_lines`
prints one unwrapped, greppable line per strategy with exact numbers, like
``pip list``. Details (every dropped fact, per-turn numbers) are in ``--json``
and the HTML report; the table shows how many facts each strategy dropped.
"""

from __future__ import annotations

from rich import box
from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from turnpress.compare.intervals import CONFIDENCE, MIN_RUNS, Interval
from turnpress.compare.pricing import CACHE_WRITE_PREMIUM
from turnpress.compare.results import AsRun, ComparisonResult, StrategyResult
from turnpress.core.compression import BASELINE_STRATEGY

__all__ = ["compact_tokens", "comparison_table", "dropped_summary", "format_cost", "notes",
           "plain_lines", "print_comparison", "sample_note", "short_cost",
           "undecided_notes"]

RECOMMENDED_MARK = "*"
AS_RUN_LABEL = "as run (billed)"


def format_cost(usd: float) -> str:
    """``$0.0235``: four decimals, more for tiny amounts, thousands separators for big."""
    if usd == 0:
        return "$0"
    if abs(usd) < 0.001:
        return f"${usd:.6f}"
    return f"${usd:,.4f}"


def short_cost(usd: float) -> str:
    """A cost in at most 8 characters: ``$0.0235``, ``$12.35``, ``$1,234``."""
    if usd == 0:
        return "$0"
    if abs(usd) < 0.001:
        return f"${usd:.5f}"
    if abs(usd) < 1:
        return f"${usd:.4f}"
    if abs(usd) < 100:
        return f"${usd:.2f}"
    return f"${usd:,.0f}"


def compact_tokens(n: int) -> str:
    """``9,876``, ``123.4k``, ``4.71M``: at most 7 characters."""
    if n < 100_000:
        return f"{n:,}"
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    if n < 100_000_000:
        return f"{n / 1e6:.2f}M"
    return f"{n / 1e6:,.0f}M"


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def _is_baseline(s: StrategyResult) -> bool:
    return s.label == BASELINE_STRATEGY


def _title(result: ComparisonResult) -> str:
    n, prompts = len(result.traces), result.prompts
    sample = result.sample
    drawn = "" if sample is None or sample.every_run else \
        f" (sample of {sample.population})"
    return (f"turnpress compare: {n} trace{'s' * (n != 1)}{drawn}, {prompts} prompt"
            f"{'s' * (prompts != 1)} per strategy")


def _span(interval: Interval, decimals: int, scale: float = 1.0, sep: str = "-") -> str:
    """``low-high`` with ``decimals`` decimals (values times ``scale``)."""
    return f"{interval.low * scale:.{decimals}f}{sep}{interval.high * scale:.{decimals}f}"


def _ci_cell(value: str, interval: Interval, decimals: int) -> Text:
    """A table cell: the figure, and under it its interval (``.55-.76``, narrow) when
    that is wider than the figure's printed precision."""
    if not interval.wider_than(decimals):
        return Text(value)
    low, high = (f"{x:.{decimals}f}".removeprefix("0") for x in (interval.low, interval.high))
    return Text.assemble(value, "\n", (f"{low}-{high}", "dim"))


def _recommendation_notes(result: ComparisonResult) -> list[str]:
    """What the footer says about the recommendation, from the recall intervals: the
    recommended strategy, and the cheaper candidate more runs could settle."""
    best = result.recommended
    lines = []
    if best is not None:
        lines.append(f"{RECOMMENDED_MARK} recommended: {best.label}, the cheapest whose "
                     f"recall is >= {result.min_recall:g} (--min-recall) at the lower bound "
                     f"of its {CONFIDENCE * 100:g}% interval (recall "
                     f"{best.needed_fact_recall:.3f}, worst run {best.min_trace_recall:.3f})")
    return lines + undecided_notes(result)


def undecided_notes(result: ComparisonResult) -> list[str]:
    """The footer's lines on a recommendation withheld (why: recall measured nothing, no
    strategy reaches the bar, one run gives no interval, the candidate's interval reaches
    under the bar) or on a cheaper candidate still undecided; the HTML report says the
    same lines. Empty when a recommendation is made and nothing cheaper is open."""
    pct = f"{CONFIDENCE * 100:g}%"
    best, bar = result.recommended, result.min_recall
    if best is None:
        if not result.compared:
            return []
        if not any(s.needed for s in result.compared):
            return ["no recommendation: no prompt had a needed fact, so recall measured "
                    "nothing (the runs are too short, or have no turns)"]
    candidate = result.candidate
    if candidate is None:
        if best is None:
            return [f"no recommendation: no strategy has recall >= {bar:g} (--min-recall), "
                    f"even at the upper bound of its {pct} interval"]
        return []
    s, ci = candidate.strategy, candidate.recall
    runs = len(result.traces)
    if runs < MIN_RUNS:
        return [f"no recommendation: one run gives no {pct} interval (they resample "
                f"runs); on it, the cheapest with recall >= {bar:g} (--min-recall) is "
                f"{s.label} (recall {s.needed_fact_recall:.3f}): compare more runs to "
                f"settle it"]
    where = (f"{s.label} has recall {s.needed_fact_recall:.3f}, {pct} interval "
             f"{ci.low:.3f}-{ci.high:.3f} over {runs} run{'s' * (runs != 1)}")
    sample = result.sample
    more = ("compare more of the runs (a larger --sample, or all of them)"
            if sample is not None and not sample.every_run else "compare more runs")
    if candidate.runs_to_settle is None:
        settle = "no number of runs would settle it (its recall is on the bar)"
    else:
        settle = f"about {candidate.runs_to_settle} runs in all would settle it"
    head = "no recommendation" if best is None else "undecided, and cheaper"
    if s.needed_fact_recall >= bar - 1e-12:
        return [f"{head}: the best candidate, {where}: the interval reaches under "
                f"{bar:g} (--min-recall); {more}: {settle}, if its recall holds"]
    return [f"{head}: {where}: under {bar:g} (--min-recall), but the interval reaches it; "
            f"{more}: {settle}"]


def notes(result: ComparisonResult, *, plain: bool = False) -> list[str]:
    """The lines under the table: settings, what each column means, what was left out
    (``plain``: naming the columns as :func:`plain_lines` heads them)."""
    ratio, kept, drop = (("cost_ratio", "retention", "dropped_facts") if plain
                         else ("xfull", "kept", "drop"))
    lines = [f"tokenizer {result.tokenizer} · cache {result.cache} · price {result.price} "
             f"USD per million tokens",
             "cached: share of input tokens read from the prompt cache"]
    if result.cache == "anthropic":
        price = result.price
        at = (f"write={price.write:g}" if price.write is not None else
              f"write={price.effective_write:g}: {CACHE_WRITE_PREMIUM:g}x input, as no "
              f"write= was given")
        lines.append(f"{'written' if plain else 'wrote'}: tokens written to the cache "
                     f"(billed at {at})")
    lines += [f"{ratio}: cost as a multiple of full-history's",
              f"{kept}: mean share of the history's facts shown (retention); {drop}: how "
              f"many distinct facts some prompt lacked",
              "recall: share of the facts the agent went on to use that the prompt still shows"]
    if result.baseline_cost_usd:
        lines.append(f"floor: {format_cost(result.floor_usd)} "
                     f"({result.floor_usd / result.baseline_cost_usd:.2f}x full-history), each "
                     f"new message sent once and nothing re-read, the system prompt "
                     + ("read from the cache" if result.cache != "none"
                        else "sent each call (no cache)"))
    drawn = sample_note(result)
    if drawn is not None:
        lines.append(drawn)
    ci = ("cost_ratio_95ci, recall_95ci, saved_95ci" if plain
          else f"under {ratio} and recall")
    lines.append(f"{ci}: {CONFIDENCE * 100:g}% bootstrap interval over runs (seed "
                 f"{result.seed}), shown where wider than the printed figure")
    lines += _recommendation_notes(result)
    if result.as_run is not None:
        lines.append(f"{AS_RUN_LABEL}: what the provider billed, in its own tokenizer "
                     f"({result.as_run.prompts} prompts with usage)")
        lacking = result.as_run.runs_without_system
        if lacking:
            lines.append(f"{AS_RUN_LABEL}: {lacking} of the runs with usage log no system "
                         f"prompt (Claude Code does not write it, nor its tool definitions): "
                         f"what was billed for them holds what the replayed prompts lack, so "
                         f"their billed cost is not comparable")
    lines += never_cached(result)
    for label, status, reason in result.not_compared:
        lines.append(f"{label}: {status}: {reason}")
    for s in result.compared:
        if s.summary_calls:
            lines.append(f"{s.label}: {s.summary_calls} summarization "
                         f"call{'s' * (s.summary_calls != 1)}, each billed as its own row: "
                         f"{s.summary_input_tokens} input tokens at the input price, "
                         f"{s.summary_output_tokens} output tokens at the output price, "
                         f"${s.summary_cost_usd:.6f} (included in its cost)")
    for label, note in result.notes:
        lines.append(f"note: {label}: {note}")
    if result.skipped:
        n = len(result.skipped)
        lines.append(f"skipped: {n} run{'s' * (n != 1)} that cannot be read or have no turn "
                     f"(listed on stderr and in --json; --strict stops at the first)")
    if result.repeated:
        n = len(result.repeated)
        lines.append(f"repeated: {n} run{'s' * (n != 1)} found again in another place (the "
                     f"same run), each counted once, where it came first (listed on "
                     f"stderr and in --json)")
    return lines


def sample_note(result: ComparisonResult) -> str | None:
    """The footer's line on ``--sample`` (None without it): the runs drawn of how many, or
    that the sample is every run; the HTML report says the same line."""
    sample = result.sample
    if sample is None:
        return None
    if sample.every_run:
        return f"sample: all {sample.population} runs (--sample asked for at least as many)"
    return (f"sample: {sample.runs} of {sample.population} runs, drawn stratified by length "
            f"(--sample {sample.runs} --seed {sample.seed})")


def never_cached(result: ComparisonResult) -> list[str]:
    """A line for each strategy whose prompts never reached a cached prefix under a cache
    model that caches (so it pays the full input price on every call)."""
    if result.cache == "none":
        return []
    why = ("no prompt repeats an earlier prompt's first 1024 tokens" if result.cache == "openai"
           else "no cache_control breakpoint falls on a prefix of 1024+ tokens that a later "
                "prompt repeats: mark the end of the stable head (cache_breakpoints, "
                "docs/plugins.md)")
    return [f"{s.label}: its prompts never reach a cached prefix (0.0% cached): {why}"
            for s in result.compared if s.prompts > len(result.traces) and not s.cached_tokens
            and not _is_baseline(s)]


def comparison_table(result: ComparisonResult, *, gap: int = 2) -> Table:
    """The summary table: one row per strategy, totals over every prompt of every trace;
    an "as run" row when traces carry billed usage; ``n/a``/``failed`` rows for the
    strategies left out (reasons in :func:`notes`)."""
    anthropic = result.cache == "anthropic"
    table = Table(title=_title(result), caption="\n".join(notes(result)),
                  caption_justify="left", box=box.SIMPLE_HEAD, show_edge=False,
                  pad_edge=False, collapse_padding=True, padding=(0, max(gap, 1) - 1))
    table.add_column("strategy", overflow="fold", min_width=12)
    for header in ("tokens", "cached", *(("wrote",) if anthropic else ()), "cost",
                   "xfull", "kept", "recall", "drop"):
        table.add_column(header, justify="right", no_wrap=True)
    best = result.recommended
    intervals = result.intervals()
    for s in result.strategies:
        if not s.compared:
            assert s.status is not None
            table.add_row(s.label, s.status[0], *[""] * (7 + anthropic))
            continue
        ci = intervals[s.label]
        label = Text(s.label)
        if s is best:
            label.append(f" {RECOMMENDED_MARK}", style="bold green")
        row: list[str | Text] = [label, compact_tokens(s.input_tokens), _pct(s.cached_share)]
        if anthropic:
            row.append(compact_tokens(s.written_tokens))
        row += [short_cost(s.cost_usd), _ci_cell(f"{s.cost_ratio:.2f}x", ci["cost_ratio"], 2),
                f"{s.retention:.2f}",
                _ci_cell(recall_text(s, 3), ci["needed_fact_recall"], 3),
                str(s.dropped_facts)]
        table.add_row(*row)
    for label, status, _reason in result.unresolved:
        table.add_row(label, status, *[""] * (7 + anthropic))
    run = result.as_run
    if run is not None:
        table.add_row(Text(AS_RUN_LABEL, style="italic"), compact_tokens(run.prompt_tokens),
                      _pct(run.cached_share),
                      *((compact_tokens(run.cache_write_tokens),) if anthropic else ()),
                      short_cost(run.cost_usd), _ratio(run), "", "", "")
    return table


def recall_text(s: StrategyResult, digits: int) -> str:
    """A strategy's needed-fact recall for a table: ``n/a`` when no prompt had a needed
    fact (recall measured nothing)."""
    return f"{s.needed_fact_recall:.{digits}f}" if s.needed else "n/a"


def _ratio(run: AsRun) -> str:
    ratio = run.cost_ratio
    return "" if ratio is None else f"{ratio:.2f}x"


def plain_lines(result: ComparisonResult) -> list[str]:
    """The comparison as plain lines for a pipe: a header, one line per strategy with
    exact numbers (columns aligned, never wrapped), then :func:`notes`."""
    anthropic = result.cache == "anthropic"
    header = ["strategy", "tokens", "saved", "cached", *(["written"] if anthropic else []),
              "cost_usd", "cost_ratio", "retention", "recall", "dropped_facts",
              "cost_ratio_95ci", "recall_95ci", "saved_95ci"]
    rows = [header]
    best = result.recommended
    intervals = result.intervals()
    for s in result.strategies:
        if not s.compared:
            assert s.status is not None
            rows.append([s.label, s.status[0]])
            continue
        rows.append([s.label + (f" {RECOMMENDED_MARK}" if s is best else ""),
                     str(s.input_tokens),
                     "-" if _is_baseline(s) else _pct(s.savings_vs_full_history),
                     _pct(s.cached_share), *([str(s.written_tokens)] if anthropic else []),
                     f"{s.cost_usd:.6f}", f"{s.cost_ratio:.3f}", f"{s.retention:.3f}",
                     recall_text(s, 3), str(s.dropped_facts),
                     *_plain_intervals(intervals[s.label])])
    for label, status, _reason in result.unresolved:
        rows.append([label, status])
    run = result.as_run
    if run is not None:
        rows.append([AS_RUN_LABEL.replace(" ", "-"), str(run.prompt_tokens), "-",
                     _pct(run.cached_share),
                     *([str(run.cache_write_tokens)] if anthropic else []),
                     f"{run.cost_usd:.6f}",
                     "-" if run.cost_ratio is None else f"{run.cost_ratio:.3f}"])
    widths = [max(len(r[i]) for r in rows if i < len(r)) for i in range(len(header))]
    lines = [_title(result)]
    for r in rows:
        cells = [c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)]
        lines.append("  ".join(cells).rstrip())
    return lines + notes(result, plain=True)


def _plain_intervals(ci: dict[str, Interval]) -> list[str]:
    """The interval columns of a plain line, ``low..high`` as the figures are printed
    there (3 decimals, saved in % with 1); ``-`` where an interval is not wider."""
    saved = ci["savings_vs_full_history"]
    return [_span(ci["cost_ratio"], 3, sep="..") if ci["cost_ratio"].wider_than(3) else "-",
            _span(ci["needed_fact_recall"], 3, sep="..")
            if ci["needed_fact_recall"].wider_than(3) else "-",
            _span(saved, 1, 100, sep="..") + "%"
            if Interval(saved.low * 100, saved.high * 100).wider_than(1) else "-"]


def dropped_summary(result: ComparisonResult, examples: int = 3) -> list[str]:
    """One line per strategy that dropped facts, with the first ``examples`` of them."""
    lines = []
    for s in result.compared:
        if not s.dropped_examples:
            continue
        if examples <= 0:
            lines.append(f"{s.label} dropped {s.dropped_facts} distinct "
                         f"fact{'s' * (s.dropped_facts != 1)}")
            continue
        shown = "; ".join(f"{d.fact} ({d.trace}, turn {d.turn})"
                          for d in s.dropped_examples[:examples])
        more = s.dropped_facts - min(examples, len(s.dropped_examples))
        lines.append(f"{s.label} dropped: {shown}" + (f"; and {more} more" if more > 0 else ""))
    return lines


def print_comparison(result: ComparisonResult, console: Console | None = None,
                     *, examples: int = 3, plain: bool | None = None) -> None:
    """Print the table and the dropped-facts lines; ``plain`` (default: when the
    console is not a terminal) prints :func:`plain_lines` instead of the table."""
    console = console or Console()
    if plain is None:
        plain = not console.is_terminal
    if plain:
        for line in [*plain_lines(result), *dropped_summary(result, examples)]:
            console.file.write(line + "\n")
        return
    table = comparison_table(result)
    if Measurement.get(console, console.options.update_width(1_000), table).maximum \
            > console.width:
        table = comparison_table(result, gap=1)  # whole strategy names before wide gaps
    parts: list[RenderableType] = [table]
    parts.extend(Text(line) for line in dropped_summary(result, examples))
    console.print(Group(*parts))
