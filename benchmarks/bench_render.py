"""Render speed: turnpress's render path vs a hand-written renderer of the same format.

The hand-written renderer (``benchmarks/handwritten_render.py``) is plain Python
f-strings producing ``single-user-coalesced`` byte for byte. This script first
asserts that both give the same messages, then times the prompt of turn 10 and of
turn 1000 of one synthetic 1000-turn run, alternating the two renderers so machine
noise hits both alike, and prints the median ratio of each. Target (issue 12 item
5): at most 3x at both turns.

turnpress renders through its one render path: ``Trace.prompt(n)`` (what
``turnpress render``, ``trace show`` and the agent loop use). Inputs are built
here; the real corpus is not needed.

Run: ``python benchmarks/bench_render.py`` (``--profile`` prints a cProfile of the
turnpress side at turn 10).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import handwritten_render

from turnpress import Failure, Fn, Tool, ToolCall, Turn
from turnpress.core.model import Memory
from turnpress.core.trace import Trace

TARGET = 3.0
TOTAL_TURNS = 1000
MAX_TURNS = 1005
PROFILE_TURN = 1000


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
        ours.append(per_call(lambda: trace.prompt(n), number))
        theirs.append(per_call(lambda: handwritten(trace, n), number))
    return statistics.median(ours), statistics.median(theirs)


def main() -> int:
    trace = make_trace()
    for n in (1, 2, 10, 11, 13, 500, TOTAL_TURNS, TOTAL_TURNS + 1):
        ours, theirs = trace.prompt(n), handwritten(trace, n)
        if ours != theirs:
            print(f"MISMATCH at turn {n}:\n--- turnpress\n{ours[1]['content']}\n"
                  f"--- hand-written\n{theirs[1]['content']}")
            return 1
    print("byte equality: turnpress == hand-written at turns 1, 2, 10, 11, 13, 500, 1000, 1001")
    if "--profile" in sys.argv:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.runcall(lambda: [trace.prompt(PROFILE_TURN) for _ in range(300)])
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
