"""Where the default's cost above the floor goes, run by run (not a test).

Issue 18. ``bench_cost.py`` prints what the default costs; this prints, for the bundled
long runs (30+ turns) and with ``--corpus FOLDER`` for a half of the shared corpus,
under each cache model (``openai`` priced ``openai-gpt-4.1``, ``anthropic`` priced
``anthropic-sonnet-4``), the default's cost split into parts, each as a share of
``full-history``'s cost on that run, beside the floor (each new message sent once,
nothing re-read, the system prompt read from the cache) and its own parts:

- ``sys``: the system prompt read from the cache on every call (the floor pays it too);
- ``mem``: the rest of what the cache serves: the mission, the view and the deltas,
  read again on every call;
- ``rebuild``: what the prompts that rebuilt the view paid beyond ``sys`` and ``mem``
  (their uncached tokens and, under Anthropic, cache writes);
- ``tail``: what the other prompts paid beyond ``sys`` and ``mem``: the new delta and
  the latest turn, sent once (uncached, or written to the cache);
- ``floor new``: the floor's price of the new messages, sent once.

The per-call columns give tokens: ``mem/call`` (re-read beyond the system prompt),
``tail/call`` (uncached or written on a prompt that did not rebuild) and ``new/call``
(what ``full-history`` adds per call: the floor's new messages).

The system prompt's tokens are counted as one message alone, so ``sys`` and the
floor's ``sys`` are close to, not exactly, what ``compare`` counts.

Run: ``python benchmarks/bench_cost_breakdown.py [--corpus mini-swe-agent] [--jobs N]``.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from bench_cost import DEFAULT, SETTINGS, bundled, corpus

from turnpress import get_strategy, load_trace
from turnpress.compare import compare_traces
from turnpress.core.compression import RenderContext
from turnpress.core.pricing import Price, get_cache_rules, get_price
from turnpress.core.tokens import count_prompt_tokens


def rebuilt_at(path: Path, cache: str, price: Price) -> tuple[int, set[int]]:
    """The system prompt's tokens and the prompts (1-based) that rebuilt the default's
    view (its last checkpoint moved since the prompt before)."""
    trace = load_trace(path)
    strategy = get_strategy(DEFAULT)
    rules = get_cache_rules(cache)
    system = count_prompt_tokens([{"role": "system", "content": trace.system_prompt}])
    if not hasattr(strategy, "checkpoints"):
        return system, set()
    out, last = set(), 0
    for n in range(1, len(trace.turns) + 1):
        args = trace.prompt_arguments(n)
        ctx = RenderContext(mission=args["mission"], system_prompt=args["system_prompt"],
                            tools=args["tools"], data=args["data"],
                            turns_left=args["turns_left"], preamble=args["preamble"])
        ctx = replace(ctx, cache=rules, price=price)
        c = strategy.checkpoints(args["turns"], ctx)[0]
        if c != last:
            out.add(n)
        last = c
    return system, out


def breakdown(title: str, paths: list[Path], jobs: int = 1) -> None:
    """Print one table per cache model."""
    for cache, price_name, _ in SETTINGS:
        price = get_price(price_name, cache)
        result = compare_traces(paths, ["full-history", DEFAULT], cache=cache,
                                price=price_name, jobs=jobs)
        default = result.strategy(DEFAULT)
        write = price.effective_write
        print(f"{title}: cache {cache}, price {price}")
        print(f"  {'run':28} {'turns':>5} {'default':>7} = {'sys':>5} + {'mem':>5} + "
              f"{'rebuild':>7} + {'tail':>5} | {'floor':>5} = {'sys':>5} + {'new':>5} | "
              f"{'mem/call':>8} {'tail/call':>9} {'new/call':>8} {'rebuilds':>8}")
        rows = list(default.rows())
        totals = [0.0] * 8
        for i, info in enumerate(result.traces):
            system, rebuilds = rebuilt_at(paths[i], cache, price)  # one run a file
            sys_cost = mem = rebuild = tail = 0.0
            mem_tokens = tail_tokens = appends = 0
            for trace, turn, tokens, cached, written, _ in rows:
                if trace != i:
                    continue
                head = min(cached, system)
                sys_cost += head * price.cached
                mem += (cached - head) * price.cached
                rest = (tokens - cached - written) * price.input + written * write
                mem_tokens += cached - head
                if turn in rebuilds or turn == 1:
                    rebuild += rest
                else:
                    tail += rest
                    tail_tokens += tokens - cached
                    appends += 1
            base = info.baseline_cost_usd * 1e6
            floor = info.floor_usd * 1e6
            floor_sys = info.turns * system * price.cached
            parts = [sys_cost, mem, rebuild, tail, floor, floor_sys, floor - floor_sys]
            for k, v in enumerate(parts):
                totals[k] += v
            totals[7] += base
            new_per_call = (floor - floor_sys) / price.input / max(1, info.turns)
            print(f"  {info.name[:28]:28} {info.turns:5} {sum(parts[:4]) / base:7.3f} = "
                  f"{sys_cost / base:5.3f} + {mem / base:5.3f} + {rebuild / base:7.3f} + "
                  f"{tail / base:5.3f} | {floor / base:5.3f} = {floor_sys / base:5.3f} + "
                  f"{(floor - floor_sys) / base:5.3f} | {mem_tokens / info.turns:8.0f} "
                  f"{tail_tokens / max(1, appends):9.0f} {new_per_call:8.0f} "
                  f"{len(rebuilds):8}")
        base = totals[7]
        print(f"  {'all runs':28} {'':5} {sum(totals[:4]) / base:7.3f} = "
              f"{totals[0] / base:5.3f} + {totals[1] / base:5.3f} + {totals[2] / base:7.3f} + "
              f"{totals[3] / base:5.3f} | {totals[4] / base:5.3f} = {totals[5] / base:5.3f} + "
              f"{totals[6] / base:5.3f}\n")


def main() -> None:
    """The bundled long runs, or ``--corpus FOLDER``."""
    if "--corpus" in sys.argv:
        found = corpus(sys.argv[sys.argv.index("--corpus") + 1])
        if found is None:
            return
        title, paths = found
    else:
        title, paths = bundled()
    breakdown(title, paths, int(sys.argv[sys.argv.index("--jobs") + 1])
              if "--jobs" in sys.argv else 1)


if __name__ == "__main__":
    main()
