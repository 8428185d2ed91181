"""What the default strategy costs under prompt caching, and what it still shows (not a test).

Issue 18. For each corpus and each cache model (``openai`` priced ``openai-gpt-4.1``;
``anthropic`` priced ``anthropic-sonnet-4``), measured in one run, this prints each
strategy's cost as a ratio of ``full-history``'s, its needed-fact recall (pooled) and
its worst single run's recall, the floor (each new message sent once, nothing
re-read), then whether the targets hold for the default configuration (no options):

- cost <= 0.40x ``full-history`` (openai) and <= 0.55x (anthropic), at needed-fact
  recall >= 0.92, on each half of the shared corpus and on the bundled long runs;
- the worst single run's recall >= 0.80;
- the default never costs more than ``full-history`` on any run of 10+ turns, under
  either cache model (the worst run and its ratio are printed), the bundled runs of
  10 to 29 turns included (measured alone for this check: they are not a corpus).

Corpora: ``mini-swe-agent/`` (the half the default's constants were chosen on),
``mini-swe-agent-rerun/`` (the other half, never tuned on) under
``../shared/corpus/`` (or ``/work/shared/corpus/``; skipped with a message when
absent), and the bundled long runs (``turnpress/examples``, 30+ turns).

Run: ``python benchmarks/bench_cost.py [--jobs N]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from turnpress import load_trace, normalize
from turnpress.compare import compare_traces
from turnpress.compare.results import ComparisonResult
from turnpress.examples import example_trace_paths

SETTINGS = (("openai", "openai-gpt-4.1", 0.40), ("anthropic", "anthropic-sonnet-4", 0.55))
MIN_RECALL = 0.92
MIN_TRACE_RECALL = 0.80
LONG_RUN = 30
MIN_TURNS = 10
#: the default of ``compression=True`` (issue 18: price-scheduled)
DEFAULT = normalize(True)[0] or "full-history"
#: shown beside the default for reference (their own defaults)
OTHERS = ("single-user-coalesced", "checkpoint-coalesced", "rolling-window")
ROOTS = (Path(__file__).resolve().parents[2] / "shared" / "corpus", Path("/work/shared/corpus"))


def corpus(folder: str) -> tuple[str, list[Path]] | None:
    """One half of the shared corpus, or None (with a message) when it is not here."""
    for root in ROOTS:
        paths = sorted((root / folder).glob("*.traj.json"))
        if paths:
            return f"{folder} ({len(paths)} runs)", paths
    print(f"{folder}: skipped (not found under {' or '.join(map(str, ROOTS))})\n")
    return None


def bundled() -> tuple[str, list[Path]]:
    """The bundled long runs (30+ turns)."""
    long = [p for p in example_trace_paths() if len(load_trace(p).turns) >= LONG_RUN]
    return f"bundled long runs ({len(long)} of {LONG_RUN}+ turns)", long


def short_bundled() -> list[Path]:
    """The bundled runs of :data:`MIN_TURNS` to :data:`LONG_RUN` - 1 turns (the other
    runs the "never above full-history" target covers)."""
    return [p for p in example_trace_paths()
            if MIN_TURNS <= len(load_trace(p).turns) < LONG_RUN]


def run_ratios(paths: list[Path], jobs: int, worst: list[tuple[float, str]]) -> None:
    """Add the default's cost ratio on each of ``paths`` under each cache model to
    ``worst`` (and print them)."""
    for cache, price, _ in SETTINGS:
        result = compare_traces(paths, ["full-history", DEFAULT], cache=cache, price=price,
                                jobs=jobs)
        costs = result.strategy(DEFAULT).trace_costs(result.price)
        for i, info in enumerate(result.traces):
            ratio = costs[i] / info.baseline_cost_usd
            where = f"{info.name} ({info.turns} turns, {result.cache})"
            print(f"bundled run of {MIN_TURNS}+ turns: {where}: {ratio:.3f}x full-history")
            worst.append((ratio, where))


def report(title: str, result: ComparisonResult, limit: float,
           worst: list[tuple[float, str]]) -> list[str]:
    """Print one table; return the targets it misses; add the default's run ratios
    (runs of 10+ turns) to ``worst``."""
    floor = result.floor_usd / result.baseline_cost_usd if result.baseline_cost_usd else 1.0
    print(f"{title}: cache {result.cache}, price {result.price.name}, {len(result.traces)} "
          f"runs, {result.prompts} prompts; floor {floor:.3f}x full-history")
    print(f"  {'strategy':28} {'cost/full':>9} {'cost/floor':>10} {'recall':>7} "
          f"{'worst run':>9}")
    for s in sorted(result.compared, key=lambda s: s.cost_ratio):
        print(f"  {s.label:28} {s.cost_ratio:8.3f}x {s.floor_ratio:9.2f}x "
              f"{s.needed_fact_recall:7.3f} {s.min_trace_recall:9.3f}")
    default = result.strategy(DEFAULT)
    missed = []
    checks = [(default.cost_ratio <= limit, f"cost {default.cost_ratio:.3f}x <= {limit}x"),
              (default.needed_fact_recall >= MIN_RECALL,
               f"recall {default.needed_fact_recall:.3f} >= {MIN_RECALL}"),
              (default.min_trace_recall >= MIN_TRACE_RECALL,
               f"worst run recall {default.min_trace_recall:.3f} >= {MIN_TRACE_RECALL}")]
    for ok, text in checks:
        print(f"  default {DEFAULT}: {text}: {'OK' if ok else 'MISSED'}")
        if not ok:
            missed.append(f"{title}, {result.cache}: {text}")
    costs = default.trace_costs(result.price)
    for i, info in enumerate(result.traces):
        if info.turns >= MIN_TURNS and info.baseline_cost_usd:
            worst.append((costs[i] / info.baseline_cost_usd,
                          f"{info.name} ({info.turns} turns, {result.cache})"))
    return missed


def main(jobs: int = 2) -> None:
    """Every corpus under every cache model, then the verdicts."""
    corpora = [c for c in (corpus("mini-swe-agent"), corpus("mini-swe-agent-rerun")) if c]
    corpora.append(bundled())
    missed: list[str] = []
    worst: list[tuple[float, str]] = []
    specs = ["full-history", DEFAULT, *(s for s in OTHERS if s != DEFAULT)]
    for title, paths in corpora:
        for cache, price, limit in SETTINGS:
            result = compare_traces(paths, specs, cache=cache, price=price, jobs=jobs,
                                    min_recall=MIN_RECALL)
            missed += report(title, result, limit, worst)
            print()
    run_ratios(short_bundled(), jobs, worst)
    ratio, where = max(worst)
    ok = ratio <= 1.0
    print(f"worst run of {MIN_TURNS}+ turns for the default: {where}: {ratio:.3f}x "
          f"full-history ({'OK' if ok else 'MISSED'}: never above 1x)")
    if not ok:
        missed.append(f"default above full-history on {where}: {ratio:.3f}x")
    print("targets: " + ("all hold" if not missed else f"{len(missed)} missed"))
    for m in missed:
        print(f"  MISSED {m}")


if __name__ == "__main__":
    main(int(sys.argv[sys.argv.index("--jobs") + 1]) if "--jobs" in sys.argv else 2)
