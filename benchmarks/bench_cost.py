"""What each strategy costs under prompt caching, and what it still shows (not a test).

Issue 11 item 4. For each corpus and each cache model (``openai`` priced
``openai-gpt-4.1``; ``anthropic`` priced ``anthropic-sonnet-4``) this prints every
strategy's cost as a ratio of ``full-history``'s, its needed-fact recall and its
retention, then whether the targets hold:

- the best built-in strategy at needed-fact recall >= 0.9 costs at most 0.5x
  ``full-history`` under openai and at most 0.6x under anthropic, on both corpora;
- the default ``single-user-coalesced`` costs less than ``full-history`` on every
  bundled run of 30 or more turns, under both cache models.

Corpora: the bundled runs (``turnpress/examples``; the long ones, 30+ turns, when
there are any) and the shared corpus of real mini-swe-agent runs
(``../shared/corpus/mini-swe-agent/`` from the repository root, or
``/work/shared/corpus/mini-swe-agent/``; skipped with a message when absent or
unreadable).

Besides every registered strategy with its default options, the named variants in
``VARIANTS`` are measured as extra rows (they count as built-in strategies).

Run: ``python benchmarks/bench_cost.py [--jobs N]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from turnpress import load_trace
from turnpress.compare import compare_traces
from turnpress.compare.results import ComparisonResult
from turnpress.core.registry import get_registry
from turnpress.core.trace import TraceError
from turnpress.examples import example_trace_paths

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_transcripts import corpus_paths

SETTINGS = (("openai", "openai-gpt-4.1", 0.5), ("anthropic", "anthropic-sonnet-4", 0.6))
MIN_RECALL = 0.9
LONG_RUN = 30
DEFAULT = "single-user-coalesced"
#: named option variants measured as extra rows (the README recommends them for long
#: PTC-Lisp runs): more frequent checkpoints, shorter deltas, a shorter tool-call list
VARIANTS = ("checkpoint-coalesced:every=10,output_lines=5,tool_call_limit=10",)


def strategy_specs() -> list[str]:
    """Every registered strategy with its defaults, then the named variants."""
    return [*get_registry().strategies(), *VARIANTS]


def bundled_corpus() -> tuple[str, list[Path]]:
    """The bundled long runs (30+ turns), or every bundled run when none is that long."""
    paths = example_trace_paths()
    long = [p for p in paths if len(load_trace(p).turns) >= LONG_RUN]
    if long:
        return f"bundled long runs ({len(long)} of {LONG_RUN}+ turns)", long
    return f"bundled runs ({len(paths)}; none has {LONG_RUN}+ turns yet)", paths


def shared_corpus() -> tuple[str, list[Path]] | None:
    """The shared mini-swe-agent runs, or None (with a message) when unavailable."""
    paths = corpus_paths()
    if not paths:
        print("shared corpus: skipped (../shared/corpus/mini-swe-agent/ is not here)\n")
        return None
    try:
        load_trace(paths[0])
    except TraceError as exc:
        print(f"shared corpus: skipped, turnpress cannot read it yet ({exc})\n")
        return None
    return f"shared corpus ({len(paths)} mini-swe-agent runs, {paths[0].parent})", paths


def builtin(name: str) -> bool:
    """Whether a strategy comes with turnpress (not from a third-party plugin)."""
    reg = get_registry().strategies().get(name)
    return reg is not None and reg.plugin.builtin


def report(title: str, result: ComparisonResult, limit: float) -> list[str]:
    """Print one table; return the targets it misses."""
    print(f"{title}: cache {result.cache}, price {result.price.name}, "
          f"{len(result.traces)} runs, {result.prompts} prompts")
    print(f"  {'strategy':34} {'cost/full':>9} {'recall':>7} {'retention':>9}")
    for s in sorted(result.compared, key=lambda s: s.cost_ratio):
        print(f"  {s.label:34} {s.cost_ratio:8.3f}x {s.needed_fact_recall:7.3f} "
              f"{s.retention:9.3f}")
    for label, status, reason in result.not_compared:
        print(f"  {label:34} {status}: {reason}")
    missed = []
    ok = [s for s in result.compared if builtin(s.name) and s.label != "full-history"
          and s.needed_fact_recall >= MIN_RECALL]
    best = min(ok, key=lambda s: s.cost_ratio, default=None)
    if best is None:
        line = f"no built-in strategy reaches recall {MIN_RECALL}"
        missed.append(f"{title}, {result.cache}: {line}")
    else:
        hit = best.cost_ratio <= limit
        line = (f"best built-in at recall >= {MIN_RECALL}: {best.label} {best.cost_ratio:.3f}x "
                f"(target <= {limit}x: {'OK' if hit else 'MISSED'})")
        if not hit:
            missed.append(f"{title}, {result.cache}: {line}")
    print("  " + line)
    return missed


def default_below_full(result: ComparisonResult) -> list[str]:
    """Runs of 30+ turns where the default strategy costs at least full-history."""
    try:
        default = result.strategy(DEFAULT)
    except KeyError:
        return [f"{DEFAULT} was not compared"]
    if not default.compared:
        return [f"{DEFAULT}: {default.status}"]
    costs = default.trace_costs(result.price)
    bad = []
    for i, info in enumerate(result.traces):
        if info.turns < LONG_RUN:
            continue
        ratio = costs[i] / info.baseline_cost_usd if info.baseline_cost_usd else 1.0
        print(f"  {DEFAULT} on {info.name} ({info.turns} turns): {ratio:.3f}x full-history "
              f"({'OK' if ratio < 1 else 'MISSED'})")
        if ratio >= 1:
            bad.append(f"{info.name} under {result.cache}: {ratio:.3f}x")
    return bad


def main(jobs: int = 2) -> None:
    """Every corpus under every cache model, then the verdicts."""
    corpora = [bundled_corpus()]
    shared = shared_corpus()
    if shared is not None:
        corpora.append(shared)
    missed: list[str] = []
    for index, (title, paths) in enumerate(corpora):
        for cache, price, limit in SETTINGS:
            result = compare_traces(paths, strategy_specs(), cache=cache, price=price, jobs=jobs,
                                    min_recall=MIN_RECALL)
            missed += report(title, result, limit)
            if index == 0:
                missed += [f"default above full-history: {m}"
                           for m in default_below_full(result)]
            print()
    print("targets: " + ("all hold" if not missed else f"{len(missed)} missed"))
    for m in missed:
        print(f"  MISSED {m}")


if __name__ == "__main__":
    main(int(sys.argv[sys.argv.index("--jobs") + 1]) if "--jobs" in sys.argv else 2)
