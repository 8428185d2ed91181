"""summary-compaction beside the other strategies on real runs (issue 22; not a test).

For each half of the shared corpus (``mini-swe-agent/`` and ``mini-swe-agent-rerun/``)
and each cache model (``openai`` priced ``openai-gpt-4.1``, ``anthropic`` priced
``anthropic-sonnet-4``), prints each strategy's cost as a ratio of
``full-history``'s (summarization calls included), its needed-fact recall, its
retention and how many summaries it made. ``summary-compaction`` runs with the
offline ``extractive`` summarizer (free: its cost is the prompts' own, cache breaks
included) at three triggers, each from an anchor:

- 150000 tokens (the default): Anthropic's ``compact_20260112`` default trigger;
- 50000 tokens: the least that edit accepts;
- 4000 tokens: the trigger in LangChain's ``SummarizationMiddleware`` documentation.

``keep`` stays at its default, 10 turns (LangChain's default ``keep`` of 20 messages).
Nothing was tuned: the triggers are the anchors'.

Run: ``python benchmarks/bench_summary.py [CORPUS_ROOT]`` (default
``../shared/corpus`` from the repository root, or ``/work/shared/corpus``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from turnpress.compare import compare_traces

HALVES = ("mini-swe-agent", "mini-swe-agent-rerun")
SETTINGS = (("openai", "openai-gpt-4.1"), ("anthropic", "anthropic-sonnet-4"))
STRATEGIES = (
    "full-history",
    "single-user-coalesced",
    "rolling-window",
    "observation-masking",
    "checkpoint-coalesced",
    "summary-compaction:summarizer=extractive",
    "summary-compaction:trigger=50000,summarizer=extractive",
    "summary-compaction:trigger=4000,summarizer=extractive",
)
ROOTS = (Path(__file__).resolve().parent.parent.parent / "shared" / "corpus",
         Path("/work/shared/corpus"))


def corpus_root(given: str | None) -> Path | None:
    """The corpus directory holding both halves, or None."""
    for root in ([Path(given)] if given else ROOTS):
        if all((root / half).is_dir() for half in HALVES):
            return root
    return None


def main(argv: list[str]) -> int:
    root = corpus_root(argv[1] if len(argv) > 1 else None)
    if root is None:
        print("skipped: the shared corpus (mini-swe-agent/ and mini-swe-agent-rerun/) "
              "is not there")
        return 0
    for half in HALVES:
        paths = sorted((root / half).glob("*.traj.json"))
        for cache, price in SETTINGS:
            started = time.perf_counter()
            result = compare_traces([str(p) for p in paths], list(STRATEGIES), cache=cache,
                                    price=price, summary_cache=None)
            took = time.perf_counter() - started
            print(f"\n{half} ({len(paths)} runs, {result.prompts} prompts), cache {cache}, "
                  f"price {price} ({took:.0f} s)")
            print(f"{'strategy':58} {'cost':>6} {'recall':>7} {'kept':>6} {'summaries':>9}")
            for s in result.strategies:
                if not s.compared:
                    print(f"{s.label:58} {s.status}")
                    continue
                print(f"{s.label:58} {s.cost_ratio:6.3f} {s.needed_fact_recall:7.3f} "
                      f"{s.retention:6.3f} {s.summary_calls:9d}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
