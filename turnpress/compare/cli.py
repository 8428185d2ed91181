"""``turnpress compare``: a thin click layer over :func:`turnpress.compare.compare_traces`."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from turnpress.cli import CLIError, scan_inputs, templates_option
from turnpress.compare.cache import cache_model_names
from turnpress.compare.engine import NothingCompared, check_settings, compare_traces
from turnpress.compare.failures import CompareError, TemplateCompareError
from turnpress.compare.html import write_html_report
from turnpress.compare.pricing import PRICE_PRESETS
from turnpress.compare.sources import count_traces
from turnpress.compare.table import print_comparison
from turnpress.core.errors import ExecutorError
from turnpress.core.registry import PluginError
from turnpress.core.strategy_lookup import baseline_spec
from turnpress.core.summaries import SummaryBudgetExceeded
from turnpress.core.trace import TraceError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

    from turnpress.compare.results import Skipped, TraceInfo

__all__ = ["HTML_PROMPT_TRACES", "PROGRESS_MIN_TRACES", "compare"]

PROGRESS_MIN_TRACES = 20
"""From this many traces on, a progress bar runs on stderr (when it is a terminal)."""

HTML_PROMPT_TRACES = 20
"""The HTML report shows the rendered prompts of this many traces (the first ones)."""


@click.command()
@click.argument("traces", nargs=-1, metavar="[TRACE]...")
@click.option("--strategy", "-s", "strategies", multiple=True, metavar="NAME[:k=v,...]|none",
              help="A strategy to compare (repeatable; default: every registered one), "
                   "e.g. rolling-window:window=3.")
@click.option("--tokenizer", "-t", default="o200k_base", show_default=True,
              help="Token counter: o200k_base, cl100k_base (exact), chars4, or a plugin's.")
@click.option("--cache", "cache", default="openai", show_default=True,
              metavar="|".join(cache_model_names()),
              help="Prompt-cache model: openai (automatic prefix cache), anthropic "
                   "(cache_control breakpoints) or none.")
@click.option("--price", default=None,
              metavar="PRESET|in=..,cached=..[,write=..][,out=..]",
              help="USD per million tokens: a preset (" + ", ".join(PRICE_PRESETS)
                   + ") or your own; out= is the output price summarization calls pay. "
                     "Default: anthropic-sonnet-4 with --cache anthropic, else "
                     "openai-gpt-4.1.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option("--html", "html_path", default=None, metavar="FILE",
              help="Also write a self-contained HTML report to FILE.")
@click.option("--min-recall", type=click.FloatRange(0.0, 1.0), default=0.9, show_default=True,
              help="Recommend the cheapest strategy whose needed-fact recall is at least "
                   "this.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True,
              help="Worker processes (traces are spread over them); with --executor dask "
                   "and no address, the local cluster's workers.")
@click.option("--executor", default=None, metavar="NAME[:ADDRESS]",
              help="Where the traces run: local (default, --jobs processes), "
                   "dask[:tcp://HOST:8786] (Dask distributed, extra turnpress[dask]; no "
                   "address: a local cluster), or a plugin's executor.")
@click.option("--per-trace", "per_trace", default=None, metavar="FILE.jsonl",
              help="Write one JSON line per trace and strategy (cost, recall, as run) to "
                   "FILE as each trace finishes.")
@click.option("--resume", default=None, metavar="FILE.jsonl",
              help="Continue an interrupted comparison: traces already in FILE (written "
                   "by --per-trace) are read back, not compared again; new ones are "
                   "appended to it.")
@click.option("--strict", is_flag=True,
              help="Stop at the first run that cannot be read or has no turn (default: "
                   "skip it, name it on stderr and count it).")
@click.option("--sample", type=click.IntRange(min=1), default=None, metavar="N",
              help="Compare N of the runs, drawn at random stratified by run length "
                   "(the intervals say how far the figures can be trusted).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of --sample's draw and of the 95% bootstrap intervals.")
@click.option("--summarizer", default=None, metavar="extractive|llm:openai:MODEL|...",
              help="The summarizer of summary-compaction: extractive (no model; the "
                   "default when no model is configured), llm:openai:MODEL or "
                   "llm:anthropic:MODEL.")
@click.option("--base-url", default=None, metavar="URL",
              help="The server of --summarizer llm:... (an OpenAI- or Anthropic-"
                   "compatible endpoint).")
@click.option("--summary-cache", default=None, metavar="DIR",
              help="Where summaries are kept, so a second comparison sends no request "
                   "(default: turnpress/summaries under the user cache directory).")
@click.option("--summary-budget", type=click.FloatRange(min=0.0), default=None,
              metavar="USD",
              help="Stop before the summarization requests spend more than USD (at "
                   "--price).")
@templates_option
def compare(traces: tuple[str, ...], strategies: tuple[str, ...], tokenizer: str, cache: str,
            price: str | None, as_json: bool, html_path: str | None, min_recall: float,
            jobs: int, executor: str | None, per_trace: str | None, resume: str | None,
            strict: bool, sample: int | None, seed: int, summarizer: str | None,
            base_url: str | None, summary_cache: str | None, summary_budget: float | None,
            template_dirs: tuple[str, ...]) -> None:
    """Compare strategies on TRACE files (JSON or JSONL, a bundled trace's name, a
    directory read recursively or a glob pattern; default: every bundled example).
    Each file of a directory or pattern that no reader recognises is named on stderr.

    For every prompt of every trace and every strategy: exact prompt tokens, the
    tokens a provider serves from its prompt cache, cost, retention (which facts
    of the full history the prompt still carries) and needed-fact recall (which
    facts the agent went on to use it still shows). Traces with billed usage add
    an "as run" row. A strategy that cannot run is listed with its reason. A run
    that cannot be read or has no turn is skipped and named (--strict: stop). The
    same run found again (in another file, or on another line; whatever its name) is
    counted once, where it came first, with a warning naming both places.
    Cost ratio, recall and tokens saved get a 95% bootstrap interval over runs; a
    strategy is recommended only if its recall's lower bound is at least --min-recall.
    When no strategy asked for could run, the table is printed and the exit code is 1.

    summary-compaction's summarization calls are billed as their own rows (input at
    the input price, output at the output price); summaries are cached on disk, and
    without a configured model it uses the extractive summarizer (the footer says so).
    """

    specs = [baseline_spec(s) for s in strategies] or None
    try:  # the options first: a typo is told before a long directory scan
        check_settings(specs, tokenizer, cache, price)
    except (ValueError, PluginError) as exc:
        raise CLIError(str(exc)) from None
    # found here, not by compare_traces: a bad path is told before a long comparison,
    # and each file that is not a run is named at once; compare_traces takes what was
    # found as it is (no second scan) and gives the files that are not runs back
    found = scan_inputs(traces, count=False)  # counted once compared
    sources = found if found.files else None
    if html_path is not None:
        parent = Path(html_path).resolve().parent
        if not parent.is_dir():
            raise CLIError(f"--html {html_path}: directory {parent} does not exist")
        if Path(html_path).is_dir():
            raise CLIError(f"--html {html_path}: is a directory; name the report's file "
                           f"(e.g. --html {Path(html_path) / 'report.html'})")
    err = Console(stderr=True)
    progress_bar = None
    try:
        if err.is_terminal:
            total = count_traces(sources)
            total = total if sample is None else min(sample, total)
            if total >= PROGRESS_MIN_TRACES:
                progress_bar = _progress(err, total)
        running: AbstractContextManager[object] = progress_bar or nullcontext()
        with running:
            result = compare_traces(
                sources, specs,
                tokenizer=tokenizer, cache=cache,
                price=price, jobs=jobs, template_dirs=template_dirs,
                keep_prompts=HTML_PROMPT_TRACES if html_path else 0,
                progress=_advance(progress_bar), min_recall=min_recall,
                sample=sample, seed=seed, summarizer=summarizer, base_url=base_url,
                summary_cache=summary_cache, summary_budget=summary_budget,
                executor=executor, strict=strict, per_trace=per_trace, resume=resume)
    except SummaryBudgetExceeded as exc:
        raise click.ClickException(str(exc)) from None
    except NothingCompared as exc:
        if len(exc.skipped) > 1:
            for skipped in exc.skipped:
                click.echo(f"Skipped {skipped}", err=True)
        _echo_count(len(found.files), exc.not_runs, 0, len(exc.skipped))
        if len(exc.skipped) > 1:
            raise CLIError(f"none of the {len(exc.skipped)} runs could be compared (each "
                           f"is listed above)") from None
        raise CLIError(str(exc)) from None
    except TraceError as exc:
        raise CLIError(str(exc)) from None
    except ExecutorError as exc:
        raise CLIError(str(exc)) from None
    except (ValueError, PluginError) as exc:
        raise CLIError(str(exc)) from None
    except TemplateCompareError as exc:  # a broken template: bad input
        raise CLIError(str(exc)) from None
    except CompareError as exc:  # the comparison failed (the tokenizer, the baseline): 1
        raise click.ClickException(str(exc)) from None
    for skipped in result.skipped:
        click.echo(f"Skipped {skipped}", err=True)
    for repeated in result.repeated:
        click.echo(f"warning: {repeated}", err=True)
    sample_info = result.sample
    _echo_count(len(found.files), result.not_runs, len(result.traces), len(result.skipped),
                0 if sample_info is None else sample_info.population - sample_info.runs,
                len(result.repeated))
    if as_json:  # piece by piece: the per-prompt lists are never held whole
        for piece in result.iter_json():
            click.echo(piece, nl=False)
        click.echo()
    else:
        print_comparison(result, Console(soft_wrap=False))
    if html_path is not None:
        try:
            write_html_report(result, html_path)
        except OSError as exc:
            raise CLIError(f"--html {html_path}: {exc.strerror or exc}") from None
        click.echo(f"HTML report: {html_path}", err=True)
    if not result.compared:  # every strategy asked for failed or does not apply: exit 1
        left = ", ".join(f"{label}: {status}" for label, status, _ in result.not_compared)
        raise click.ClickException(f"nothing was compared: no strategy asked for could run "
                                   f"({left}); the reasons are listed above")


def _echo_count(files: int, not_runs: list[Skipped], compared: int, skipped: int,
                not_drawn: int = 0, repeated: int = 0) -> None:
    """When the scan of a directory or pattern skipped files that are not runs
    (``not_runs``, named on stderr as they were found): the count of the files found,
    and of the runs of the ``files`` others compared, skipped (they cannot be read or
    have no turn), found again (counted once) and not drawn by ``--sample``, on
    stderr."""
    if not not_runs:
        return
    again = f", {repeated} found again (counted once)" if repeated else ""
    drawn = f", {not_drawn} not drawn (--sample)" if not_drawn else ""
    click.echo(f"{files + len(not_runs)} file(s) found, {len(not_runs)} skipped (not a "
               f"run); the runs of the other {files}: {compared} compared, {skipped} "
               f"skipped{again}{drawn}", err=True)


def _progress(console: Console, total: int) -> Progress:
    """A transient progress bar over ``total`` traces."""
    # no refresh thread (auto_refresh=False): worker processes can then be forked
    bar = Progress(TextColumn("comparing"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("traces"), TimeElapsedColumn(), TimeRemainingColumn(),
                   console=console, transient=True, auto_refresh=False)
    bar.add_task("compare", total=total)
    return bar


def _advance(bar: Progress | None) -> Callable[[TraceInfo], None] | None:
    """The progress callback that moves ``bar`` one trace on."""
    if bar is None:
        return None

    last = [0.0]

    def step(_info: TraceInfo) -> None:
        bar.advance(bar.task_ids[0])
        now = time.monotonic()
        if now - last[0] >= 0.1 or bar.finished:
            last[0] = now
            bar.refresh()

    return step
