"""``Compressor.messages()`` cost at turn 10 vs turn 500 (issue 10 item 2; not a test).

A synthetic tool-calling run (each turn: an assistant message with one or two
parallel tool calls, their ~30-line results, every fifth turn a failing one) is
fed to a ``Compressor`` message by message. At turn 10 and at turn 500 the time of
one ``messages()`` call is measured (best of a few repeats), for each built-in
strategy, with the size of its output; ``compress()`` of the whole list (which
re-reads the run every call) is shown beside it for the default strategy, and so is a
live loop's step (add the next turn's messages, then ``messages()``). Target:
the default strategy's turn-500 / turn-10 ratio at most 2x. A strategy whose own
output grows with the run (``full-history`` sends everything) cannot be bounded:
its row shows the output growth next to the time growth. Self-contained: no corpus.

Run: ``python benchmarks/bench_compress.py [--turns 500] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from turnpress import Compressor, compress, normalize
from turnpress.core.compression import strategy_names

DEFAULT = normalize(True)[0] or "full-history"


def run_messages(turns: int) -> list[dict[str, Any]]:
    """A synthetic run of ``turns`` turns (see the module docstring)."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent. " * 40},
        {"role": "user", "content": "Fix the failing tests in the repository."}]
    for n in range(1, turns + 1):
        calls = [{"id": f"call_{n}_{k}", "type": "function", "function": {
            "name": "bash", "arguments": json.dumps({"command": f"cat src/file_{n}_{k}.py"})}}
            for k in range(1 + n % 2)]
        messages.append({"role": "assistant", "content": f"Step {n}: reading.",
                         "tool_calls": calls})
        for call in calls:
            body = "\n".join(f"line {i} of {call['id']}: value = {n * i}" for i in range(30))
            if n % 5 == 0:
                body += "\nTraceback (most recent call last):\nValueError: bad value"
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": body})
    return messages


def best_time(fn: Callable[[], Any], repeat: int) -> float:
    """The best wall time of ``repeat`` calls of ``fn``, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def prefix_length(messages: list[dict[str, Any]], turns: int) -> int:
    """The number of messages up to the end of turn ``turns``."""
    seen = 0
    for i, m in enumerate(messages):
        if m["role"] == "assistant":
            seen += 1
            if seen == turns + 1:
                return i
    return len(messages)


def measure(name: str, messages: list[dict[str, Any]], points: tuple[int, int],
            repeat: int) -> list[tuple[float, int]]:
    """``(seconds per messages() call, output characters)`` at each turn in ``points``."""
    compressor = Compressor(name)
    out, fed = [], 0
    for turns in points:
        end = prefix_length(messages, turns)
        compressor.extend(messages[fed:end])
        fed = end
        compressor.messages()  # warm the run cache, as a live loop has
        seconds = best_time(compressor.messages, repeat)
        out.append((seconds, len(json.dumps(compressor.messages()))))
    return out


def live_turn(name: str, messages: list[dict[str, Any]], turns: int, repeat: int) -> float:
    """The best time, in seconds, of one live-loop step at turn ``turns``: add the next
    turn's messages (its assistant message and tool results), then ``messages()``."""
    compressor = Compressor(name)
    fed = prefix_length(messages, turns)
    compressor.extend(messages[:fed])
    compressor.messages()
    best = float("inf")
    for k in range(turns, turns + repeat):
        end = prefix_length(messages, k + 1)
        start = time.perf_counter()
        compressor.extend(messages[fed:end])
        compressor.messages()
        best = min(best, time.perf_counter() - start)
        fed = end
    return best


def main() -> None:
    """Print the table and the default strategy's ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    points = (10, options.turns)
    messages = run_messages(options.turns)
    print(f"messages() per call at turn {points[0]} and turn {points[1]} "
          f"(best of {options.repeat}; {len(messages)} messages in all)")
    print(f"{'strategy':24} {'t10 ms':>9} {'t' + str(points[1]) + ' ms':>10} {'time x':>7} "
          f"{'output x':>9}")
    ratios = {}
    for name in strategy_names():
        (t1, c1), (t2, c2) = measure(name, messages, points, options.repeat)
        ratios[name] = t2 / t1
        print(f"{name:24} {t1 * 1000:9.2f} {t2 * 1000:10.2f} {t2 / t1:7.2f} {c2 / c1:9.2f}")
    full = [best_time(lambda k=k: compress(messages[:prefix_length(messages, k)]),
                      options.repeat) for k in points]
    print(f"{'compress() re-reading':24} {full[0] * 1000:9.2f} {full[1] * 1000:10.2f} "
          f"{full[1] / full[0]:7.2f}  (default strategy, whole list every call)")
    longer = run_messages(options.turns + options.repeat)  # the live rows add turns
    live = [live_turn(DEFAULT, longer, k, options.repeat) for k in points]
    print(f"{'live: add a turn + call':24} {live[0] * 1000:9.2f} {live[1] * 1000:10.2f} "
          f"{live[1] / live[0]:7.2f}  (default strategy, a live loop's step)")
    ratio = ratios[DEFAULT]
    verdict = "met" if ratio <= 2 else "NOT met"
    print(f"default strategy ({DEFAULT}): turn {points[1]} / turn {points[0]} = "
          f"{ratio:.2f}x (target <= 2x: {verdict}); an append-only prompt carries more "
          f"messages between rebuilds (see the output x column)")


if __name__ == "__main__":
    main()
