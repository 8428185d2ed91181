"""The scripted task the framework examples (``*_agent.py`` beside this file) share.

An agent audits a repository of source files (``repository``), one ``read_file`` call
per step, in ``reading_order``; two of the reads ask for files that do not exist. The
scripted models answer, at the end, with the largest constant they can still see
(``answer``; the smolagents example's code keeps it in a variable instead). Each example
prints, per model call, what the model received with turnpress and without it
(``print_calls``, ``print_totals``).

The strategy is the library's default, ``price-scheduled``, unless ``--strategy`` names
another (``options``). It sends each read as a compact delta (the output cut to its head
and tail) and now and then rebuilds one view of the run (tool calls, key lines, the last
error), so the model misses the largest value, in the middle of a file read 25 steps
before the end, which the full history still shows (``single-user-coalesced``,
which shows the newest 15 outputs, misses it too): the recall a strategy trades for
tokens, which ``turnpress compare`` measures on real runs. (The smolagents example
keeps it: its code holds the value in a variable.)

The examples import this module by name: a script's own folder is first on
``sys.path`` (``python examples/langchain_agent.py``); the tests put the folder on it.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import Any

MISSION = "Find the largest LIMIT_* constant in src/ and say which file defines it."
SYSTEM = "You are a careful code auditor. Read files with read_file."
MISSING = ("src/part_12_old.py", "src/summary.py")


def repository(files: int) -> dict[str, str]:
    """``files`` source files of 60 constants each; the largest sits in part 7."""
    return {f"src/part_{i:02d}.py": "\n".join(
        f"LIMIT_{i}_{k} = {(9000 if i == 7 and k == 33 else i * 100 + k)}"
        for k in range(60)) for i in range(files)}


def reading_order(files: dict[str, str]) -> list[str]:
    """The paths the model asks for, in order: every file, a missing one in the middle
    and another one last."""
    paths = list(files)
    return [*paths[:12], MISSING[0], *paths[12:], MISSING[1]]


def answer(seen: str) -> str:
    """The scripted model's answer: the largest ``LIMIT_*`` constant in ``seen``."""
    best = max(re.findall(r"(LIMIT_\d+_\d+) = (\d+)", seen), key=lambda f: int(f[1]))
    return f"The largest is {best[0]} = {best[1]}."


def print_calls(requests: list[Any], plain_requests: list[Any], tokens: Callable[[Any], int],
                size: Callable[[Any], int] = len, unit: str = "messages",
                ) -> tuple[list[int], list[int]]:
    """One line per model call: its ``size`` in ``unit`` and its ``tokens``, with turnpress
    (``requests``) and without it (``plain_requests``); the tokens of each, per call."""
    sent = [tokens(r) for r in requests]
    full = [tokens(r) for r in plain_requests]
    for number, (a, b) in enumerate(zip(sent, full, strict=True), 1):
        print(f"call {number}: {size(requests[number - 1])} {unit}, {a} tokens "
              f"(without turnpress: {size(plain_requests[number - 1])} {unit}, {b} tokens)")
    return sent, full


def print_totals(result: object, plain_result: object, sent: list[int],
                 full: list[int]) -> None:
    """The answers with and without turnpress, and the tokens the model received."""
    print(f"answer: {result} (without turnpress: {plain_result})")
    print(f"tokens received: {sum(sent)}, without turnpress: {sum(full)}, "
          f"saved: {1 - sum(sent) / sum(full):.0%}")


def options(doc: str) -> tuple[str, int]:
    """The example's command line: ``--strategy NAME`` and ``--files N``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--strategy", default="price-scheduled",
                        help="a turnpress strategy (default: the library's default)")
    parser.add_argument("--files", type=int, default=30)
    parsed = parser.parse_args()
    return parsed.strategy, parsed.files
