"""Render speed: turnpress's render path vs a hand-written renderer of the same format.

The hand-written renderer (``benchmarks/handwritten_render.py``) is plain Python
f-strings producing ``single-user-coalesced`` byte for byte. This script first
asserts that both give the same messages, then times the prompt of turn 10 and of
turn 1000 of one synthetic 1000-turn run, alternating the two renderers so machine
noise hits both alike, and prints the median ratio of each. Target (issue 12 item
5): at most 3x at both turns.

turnpress renders through its one render path: ``Trace.prompt(n, "single-user-coalesced")`` (what
``turnpress render``, ``trace show`` and the agent loop use). Inputs are built
here; the real corpus is not needed.

Run: ``python benchmarks/bench_render.py`` (``--profile`` prints a cProfile of the
turnpress side at turn 10).

``python benchmarks/bench_render.py --strategies [CORPUS_DIR]`` measures instead the
strategies' own rendering time in ``compare`` (issue 20 item 4): ``compare --jobs 1``
over the shared corpus of real runs (``../shared/corpus/mini-swe-agent/`` or
``/work/shared/corpus/mini-swe-agent/``; skipped with a message when it is absent),
each strategy's ``to_messages`` timed as ``compare`` calls it, in CPU seconds, with
the share of that time that is ``compare``'s own checks of the messages (the prompt
track's comparison with the previous prompt, the shape check) and the share of the
whole comparison, all measured in this one run.
"""

from __future__ import annotations

import functools
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import handwritten_render

from turnpress import Failure, Fn, Tool, ToolCall, Turn
from turnpress.core.model import Memory
from turnpress.core.trace import Trace

TARGET = 3.0
TOTAL_TURNS = 1000
MAX_TURNS = 1005
PROFILE_TURN = 1000
#: the format the hand-written renderer writes (the default strategy is price-scheduled
#: since issue 18, so it is named)
STRATEGY = "single-user-coalesced"


def make_trace() -> Trace:
    """A 1000-turn run with every section of the format: tools, data, functions and
    values with docstrings, tool calls, output from turn 12 on, a few failures."""
    tools = {
        "search": Tool("search", {"query": "string", "limit": "integer"}, "list",
                       "Search the product catalogue\n  by keyword"),
        "get-inventory": Tool("get-inventory", {}, "string", "Warehouse inventory report"),
        "notify": Tool("notify", {"user": "string", "text": "string"}, "nil", ""),
    }
    data = {
        "products": [{"name": f"Product {i}", "price": 10 * i, "tags": ["a", "b"]}
                     for i in range(7)],
        "category": "Electronics",
        "threshold": 4.5,
        "empty": [],
    }
    turns = []
    for n in range(1, TOTAL_TURNS + 1):
        values = {f"value-{i}": [{"id": j, "text": f"row {j} of turn {n}"} for j in range(4)]
                  for i in range(4)}
        values["good?"] = Fn(("p",), "Rating of at least 4; in stock", "boolean")
        values["helper"] = Fn(("x", "y"), None, None)
        values["flag"] = n % 2 == 0
        memory = Memory(values, docs={"value-0": "the first; rows", "flag": "toggles"})
        prints = [f"turn {n}: found {n * 3} rows", "line two\nline three"] if n >= 12 else []
        calls = [ToolCall("search", (f"query {n}", 10), None),
                 ToolCall("notify", ("ops", "x" * 90), None)]
        program = f'(def value-{n % 4} (tool/search "query {n}" 10))\n(println "done")'
        if n % 10 == 9:
            turns.append(Turn.failed(n, program, Failure("undefined_symbol",
                                                         f"undefined symbol 'valu-{n}'"),
                                     memory=memory, tool_calls=calls))
        else:
            turns.append(Turn.succeeded(n, program, None, memory=memory, prints=prints,
                                        tool_calls=calls))
    return Trace(mission="Find well-reviewed {{category}} products in stock\n", turns=turns,
                 system_prompt="You are an agent. " * 50, max_turns=MAX_TURNS, tools=tools,
                 data=data, name="bench")


def handwritten(trace: Trace, n: int) -> list[dict[str, str]]:
    return handwritten_render.render(trace.turns[: n - 1], mission=trace.mission,
                                     system_prompt=trace.system_prompt, tools=trace.tools,
                                     data=trace.data, turns_left=trace.max_turns - (n - 1))


def per_call(fn: Callable[[], object], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def ratio_at(trace: Trace, n: int, rounds: int = 9, number: int = 150) -> tuple[float, float]:
    """Median seconds per render (turnpress, hand-written), alternating rounds."""
    ours, theirs = [], []
    for _ in range(rounds):
        ours.append(per_call(lambda: trace.prompt(n, STRATEGY), number))
        theirs.append(per_call(lambda: handwritten(trace, n), number))
    return statistics.median(ours), statistics.median(theirs)


CORPUS_CANDIDATES = (Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
                     / "mini-swe-agent", Path("/work/shared/corpus/mini-swe-agent"))


def strategies(directory: str | None = None) -> int:
    """Each strategy's rendering time in ``compare --jobs 1`` over the corpus."""
    from turnpress import load_trace
    from turnpress.compare import compare_traces, engine, reuse

    paths: list[Path] = []
    for candidate in ([Path(directory)] if directory else CORPUS_CANDIDATES):
        paths = sorted(candidate.glob("*.traj.json"))
        if paths:
            break
    if not paths:
        print("skipped: the shared corpus (../shared/corpus/mini-swe-agent/) is not here")
        return 0
    traces = [load_trace(p) for p in paths]
    spent: dict[str, float] = defaultdict(float)
    checks = [0.0]
    current: list[str] = []
    render = engine._Worker._render
    same, check = reuse.PromptTrack.same, engine.check_messages

    def timed_render(self: Any, strategy: Any, *args: Any, **kwargs: Any) -> Any:
        current.append(strategy.name)
        start = time.process_time()
        try:
            return render(self, strategy, *args, **kwargs)
        finally:
            spent[current.pop()] += time.process_time() - start

    def timed_check(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                if current:
                    checks[0] += time.process_time() - start
        return call

    engine._Worker._render = timed_render  # type: ignore[method-assign]
    reuse.PromptTrack.same = timed_check(same)  # type: ignore[method-assign]
    engine.check_messages = timed_check(check)
    try:
        start = time.process_time()
        result = compare_traces(traces, None, jobs=1)
        total = time.process_time() - start
    finally:
        engine._Worker._render = render  # type: ignore[method-assign]
        reuse.PromptTrack.same = same  # type: ignore[method-assign]
        engine.check_messages = check
    rendering = sum(spent.values())
    print(f"rendering in compare --jobs 1: {len(paths)} runs, {len(result.compared)} "
          f"strategies, {result.prompts} prompts each: {rendering:.2f} s CPU of {total:.2f} s "
          f"({rendering / total:.0%}); compare's own checks of the messages in it "
          f"{checks[0]:.2f} s ({checks[0] / rendering:.0%} of rendering)")
    for name, seconds in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"  {name:28} {seconds:6.3f} s  {seconds / rendering:4.0%}  "
              f"{seconds / max(1, result.prompts) * 1e6:7.1f} us a prompt")
    return 0


def main() -> int:
    if "--strategies" in sys.argv:
        rest = sys.argv[sys.argv.index("--strategies") + 1:]
        return strategies(rest[0] if rest else None)
    trace = make_trace()
    for n in (1, 2, 10, 11, 13, 500, TOTAL_TURNS, TOTAL_TURNS + 1):
        ours, theirs = trace.prompt(n, STRATEGY), handwritten(trace, n)
        if ours != theirs:
            print(f"MISMATCH at turn {n}:\n--- turnpress\n{ours[1]['content']}\n"
                  f"--- hand-written\n{theirs[1]['content']}")
            return 1
    print("byte equality: turnpress == hand-written at turns 1, 2, 10, 11, 13, 500, 1000, 1001")
    if "--profile" in sys.argv:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.runcall(lambda: [trace.prompt(PROFILE_TURN, STRATEGY) for _ in range(300)])
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
        return 0
    failed = False
    for n in (10, TOTAL_TURNS):
        ours, theirs = ratio_at(trace, n)
        ratio = ours / theirs
        failed |= ratio > TARGET
        print(f"turn {n:>4}: turnpress {ours * 1e6:8.1f} us, hand-written "
              f"{theirs * 1e6:8.1f} us, ratio {ratio:.2f}x (target <= {TARGET:.0f}x)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
