"""Foundation benchmarks: ratios measured in one run (the machines are noisy).

1. ``to_clojure`` sampling a 10,000,000-item list vs a 10-item list (target <= 2x):
   sampling must not walk the whole value.
2. ``single-user-coalesced`` render time at turn 1000 vs turn 10 with the same memory
   size (target <= 3x): the history length must barely matter.

Run: ``python benchmarks/bench_foundation.py``
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from turnpress import Tool, ToolCall, Turn, render, to_clojure


def best_of(fn: Callable[[], object], repeat: int = 7, number: int = 200) -> float:
    """Median seconds per call over ``repeat`` rounds of ``number`` calls."""
    rounds = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        rounds.append((time.perf_counter() - start) / number)
    return statistics.median(rounds)


def bench_to_clojure() -> tuple[float, float]:
    small = [{"id": i, "name": f"item {i}"} for i in range(10)]
    big = [{"id": i, "name": f"item {i}"} for i in range(10_000_000)]
    # interleave the two so machine noise hits both alike
    t_small, t_big = [], []
    for _ in range(5):
        t_small.append(best_of(lambda: to_clojure(small, 3, 80), repeat=3, number=2000))
        t_big.append(best_of(lambda: to_clojure(big, 3, 80), repeat=3, number=2000))
    return statistics.median(t_small), statistics.median(t_big)


def history(n_turns: int, memory_size: int = 50) -> list[Turn]:
    memory = {f"value-{i}": [{"id": j, "text": "x" * 40} for j in range(5)]
              for i in range(memory_size)}
    turns = []
    for n in range(1, n_turns + 1):
        turns.append(Turn.succeeded(
            n, f"(def value-{n % memory_size} (tool/fetch {n}))", None, memory=memory,
            prints=[f"turn {n} printed this"] if n % 3 == 0 else [],
            tool_calls=[ToolCall("fetch", (n, "query text"), None)]))
    return turns


def bench_render() -> tuple[float, float]:
    tools = {"fetch": Tool("fetch", {"n": "integer", "q": "string"}, "list", "Fetch rows")}
    data = {"rows": [{"id": i} for i in range(100)]}
    short, long = history(10), history(1000)

    def run(turns: list[Turn]) -> None:
        render(turns, mission="Audit everything", tools=tools, data=data, turns_left=5)

    t_short, t_long = [], []
    for _ in range(5):
        t_short.append(best_of(lambda: run(short), repeat=3, number=30))
        t_long.append(best_of(lambda: run(long), repeat=3, number=30))
    return statistics.median(t_short), statistics.median(t_long)


def main() -> None:
    small, big = bench_to_clojure()
    print(f"to_clojure sample, 10-item list:          {small * 1e6:8.1f} us")
    print(f"to_clojure sample, 10,000,000-item list:  {big * 1e6:8.1f} us")
    print(f"  ratio big/small: {big / small:.2f}x (target <= 2x)")
    r10, r1000 = bench_render()
    print(f"single-user-coalesced render, turn 10:    {r10 * 1e3:8.2f} ms")
    print(f"single-user-coalesced render, turn 1000:  {r1000 * 1e3:8.2f} ms")
    print(f"  ratio turn 1000/turn 10: {r1000 / r10:.2f}x (target <= 3x)")


if __name__ == "__main__":
    main()
