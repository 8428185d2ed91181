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

Then the *head floor*, per run and for all runs: each call re-reads from the cache the
system prompt and the run's stable head, which every prompt of the default carries
before anything the agent learned (the mission, the ``tool/`` and ``data/`` listings;
measured from the prompts as the longest prefix every one of the default's prompts of
the run shares), and sends every new message once. ``head`` is the stable head's
tokens; ``room`` is what a target leaves above the head floor for everything the agent
learned (the view, the deltas, rebuilding): target minus head floor, as a share of
``full-history``'s cost.

The per-call columns give tokens: ``mem/call`` (re-read beyond the system prompt),
``tail/call`` (uncached or written on a prompt that did not rebuild) and ``new/call``
(what ``full-history`` adds per call: the floor's new messages).

The system prompt's tokens are counted as one message alone, so ``sys`` and the
floor's ``sys`` are close to, not exactly, what ``compare`` counts.

Last, the *oracle bound*: the head floor plus, at each call, only the earlier facts
that call needs (the identifiers its real next message used that first appeared in
earlier feedback: compare's needed facts, which the benchmark may use since it is not
the strategy), each re-read from the cache at the cached price, as if a perfect
strategy held exactly those and nothing else. It is optimistic (a fact is never
written to the cache, nor rounded to the cache's steps, nor framed by any text), so it
is a lower bound on what any strategy at that recall can cost. At recall 0.92 the
bound leaves out the costliest 8% of the needed facts (pooled, as recall is). If the
bound exceeds a target, the target is infeasible at that recall; else ``room`` says
what the target leaves above it.

Run: ``python benchmarks/bench_cost_breakdown.py [--corpus mini-swe-agent] [--jobs N]``.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

from bench_cost import DEFAULT, SETTINGS, bundled, corpus

from turnpress import get_strategy, load_trace
from turnpress.compare import compare_traces
from turnpress.compare.counting import split_turns
from turnpress.compare.needed_facts import NeededFacts
from turnpress.core.compression import RenderContext
from turnpress.core.model import Message
from turnpress.core.pricing import Price, get_cache_rules, get_price
from turnpress.core.tokens import TokenCounter, count_prompt_tokens, message_body

#: the recall the targets ask for (bench_cost.MIN_RECALL)
ORACLE_RECALL = 0.92


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


def common_head(prompts: list[list[Message]]) -> list[Message]:
    """The longest prefix every prompt of ``prompts`` shares: whole messages, then the
    common leading text of the first message that differs (as one message of its role)."""
    first = prompts[0]
    for k, message in enumerate(first):
        texts = [p[k]["content"] if k < len(p) and p[k]["role"] == message["role"] else None
                 for p in prompts]
        if any(not isinstance(t, str) for t in texts):
            return first[:k]
        if all(t == message["content"] for t in texts):
            continue
        shared = os.path.commonprefix(texts)  # noqa: RUF071 (texts: the character prefix)
        return [*first[:k], {"role": message["role"], "content": shared}] if shared else first[:k]
    return list(first)


def head_tokens(path: Path) -> tuple[int, int]:
    """The tokens of the run's stable head (beyond the leading system messages) in the
    default's prompts, and the number of prompts."""
    trace = load_trace(path)
    prompts = [trace.prompt(n, DEFAULT) for n in range(1, len(trace.turns) + 1)]
    shared = common_head(prompts)
    system = [m for m in shared if m["role"] == "system"]
    lead = len(system) if shared[:len(system)] == system else 0
    return count_prompt_tokens(shared) - count_prompt_tokens(shared[:lead]), len(prompts)


def head_floors(title: str, paths: list[Path], jobs: int = 1) -> None:
    """Print the head floor of every run under each cache model, and the room a target
    leaves above it."""
    heads = [head_tokens(p)[0] for p in paths]
    for cache, price_name, limit in SETTINGS:
        price = get_price(price_name, cache)
        result = compare_traces(paths, ["full-history"], cache=cache, price=price_name,
                                jobs=jobs)
        head_price = price.input if cache == "none" else price.cached
        print(f"{title}: head floor, cache {cache}, price {price}; target {limit}x")
        print(f"  {'run':28} {'turns':>5} {'head':>5} {'floor':>6} {'head floor':>10} "
              f"{'room':>6}")
        base = floor = lifted = 0.0
        for info, head in zip(result.traces, heads, strict=True):
            # the floor reads the system prompt from the cache on every call and sends
            # the rest once; the head floor reads the stable head from the cache too,
            # so the first call no longer sends it as new
            extra = (info.turns * head * head_price - head * price.input) / 1e6
            base += info.baseline_cost_usd
            floor += info.floor_usd
            lifted += info.floor_usd + extra
            ratio = (info.floor_usd + extra) / info.baseline_cost_usd
            print(f"  {info.name[:28]:28} {info.turns:5} {head:5} "
                  f"{info.floor_usd / info.baseline_cost_usd:6.3f} {ratio:10.3f} "
                  f"{limit - ratio:6.3f}")
        print(f"  {'all runs':28} {'':5} {'':5} {floor / base:6.3f} {lifted / base:10.3f} "
              f"{limit - lifted / base:6.3f}\n")


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


def needed_tokens(path: Path, counter: TokenCounter) -> list[list[int]]:
    """``[n-1]``: the tokens of each needed fact of the prompt for turn ``n`` (its text
    alone, one token for the space that would separate it from the next)."""
    trace = load_trace(path)
    last = len(trace.turns)
    whole = trace.prompt(last + 1, "full-history")
    needed = NeededFacts(*split_turns(whole, message_body))
    empty = counter.count([{"role": "user", "content": ""}])
    out = []
    for n in range(1, last + 1):
        out.append([counter.count([{"role": "user", "content": f.value}]) - empty + 1
                    for f in needed.for_turn(n)])
    return out


def oracle_bound(title: str, paths: list[Path], jobs: int = 1) -> None:
    """Print, under each cache model, the oracle bound of every run and of all runs at
    recall 1.0 and at :data:`ORACLE_RECALL`, and the room a target leaves above it."""
    heads = [head_tokens(p)[0] for p in paths]
    counter = TokenCounter()
    facts = [needed_tokens(p, counter) for p in paths]
    every = sorted((t for run in facts for call in run for t in call), reverse=True)
    dropped = int(len(every) * (1 - ORACLE_RECALL))  # the costliest facts left out
    cut = every[dropped - 1] if dropped else None
    for cache, price_name, limit in SETTINGS:
        price = get_price(price_name, cache)
        result = compare_traces(paths, ["full-history"], cache=cache, price=price_name,
                                jobs=jobs)
        head_price = price.input if cache == "none" else price.cached
        print(f"{title}: oracle bound, cache {cache}, price {price}; target {limit}x; "
              f"{len(every)} needed facts, {dropped} costliest left out at recall "
              f"{ORACLE_RECALL}")
        print(f"  {'run':28} {'turns':>5} {'head floor':>10} {'facts':>6} {'oracle':>6} "
              f"{'facts@.92':>9} {'oracle@.92':>10} {'room@.92':>8}")
        base = lifted = reread = reread92 = 0.0
        left = dropped
        for info, head, run in zip(result.traces, heads, facts, strict=True):
            extra = (info.turns * head * head_price - head * price.input) / 1e6
            floor = info.floor_usd + extra
            tokens = sum(map(sum, run))
            kept = 0
            for call in run:
                for t in call:
                    if left and cut is not None and t >= cut:
                        left -= 1  # one of the costliest, left out
                    else:
                        kept += t
            full, part = tokens * price.cached / 1e6, kept * price.cached / 1e6
            b = info.baseline_cost_usd
            base, lifted, reread, reread92 = base + b, lifted + floor, reread + full, \
                reread92 + part
            print(f"  {info.name[:28]:28} {info.turns:5} {floor / b:10.3f} {full / b:6.3f} "
                  f"{(floor + full) / b:6.3f} {part / b:9.3f} {(floor + part) / b:10.3f} "
                  f"{limit - (floor + part) / b:8.3f}")
        bound = (lifted + reread92) / base
        print(f"  {'all runs':28} {'':5} {lifted / base:10.3f} {reread / base:6.3f} "
              f"{(lifted + reread) / base:6.3f} {reread92 / base:9.3f} {bound:10.3f} "
              f"{limit - bound:8.3f}")
        verdict = (f"target {limit}x infeasible at recall {ORACLE_RECALL}: even the oracle "
                   f"costs {bound:.3f}x" if bound > limit else
                   f"target {limit}x leaves {limit - bound:.3f}x above the oracle at recall "
                   f"{ORACLE_RECALL}")
        print(f"  {verdict}\n")


def main() -> None:
    """The bundled long runs, or ``--corpus FOLDER``."""
    if "--corpus" in sys.argv:
        found = corpus(sys.argv[sys.argv.index("--corpus") + 1])
        if found is None:
            return
        title, paths = found
    else:
        title, paths = bundled()
    jobs = int(sys.argv[sys.argv.index("--jobs") + 1]) if "--jobs" in sys.argv else 1
    breakdown(title, paths, jobs)
    head_floors(title, paths, jobs)
    oracle_bound(title, paths, jobs)


if __name__ == "__main__":
    main()
