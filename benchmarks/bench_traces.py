"""Trace file size and load time, version 1 (whole memory per turn) vs version 2 (changes).

Not a test. Run ``python benchmarks/bench_traces.py``. Every run is synthetic (built
here, no corpus needed): an agent that reads one log page a turn with a tool and keeps
it in memory (``(def page-N (read-log N))``), the kind of run whose version 1 file
grows with turns x memory.

* the issue 12 case: 90 turns, every page kept (target: version 2 under 1.5 MB);
* 100 turns, every page kept;
* 1,000 turns, smaller pages, the last 30 kept (older ones are removed from memory),
  so version 1 stays small enough to load on a laptop.

It prints one table: turns, version, file size, load time (best of ``--repeat``), and
the v1/v2 ratios.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from turnpress.core.model import Keyword, Memory, ToolCall, Turn
from turnpress.core.trace import Trace, load_trace, save_trace

LEVELS = ["INFO", "WARN", "ERROR", "DEBUG"]


def log_page(n: int, lines: int, rnd: random.Random) -> list[dict[str, object]]:
    """One page of ``lines`` log records."""
    return [{"ts": f"2026-01-01T00:{n % 60:02d}:{i % 60:02d}", "level": rnd.choice(LEVELS),
             "service": f"svc-{rnd.randint(1, 9)}", "msg": f"request {n}-{i} took "
             f"{rnd.randint(1, 999)} ms"} for i in range(lines)]


def synthetic_run(turns: int, page_lines: int, keep: int | None, seed: int = 1) -> Trace:
    """A run of ``turns`` turns, each reading a page and keeping the last ``keep``."""
    rnd = random.Random(seed)
    memory: dict[str, object] = {"seen": 0}
    docs: dict[str, str] = {}
    out = []
    for n in range(1, turns + 1):
        page = log_page(n, page_lines, rnd)
        memory = dict(memory)
        memory[f"page-{n}"] = page
        memory["seen"] = n
        memory["levels"] = frozenset(Keyword(r["level"].lower()) for r in page)
        if keep is not None and n > keep:
            memory.pop(f"page-{n - keep}")
        docs[f"page-{n}"] = f"log page {n}"
        docs = {k: v for k, v in docs.items() if k in memory}
        program = f'(def page-{n} "log page {n}" (read-log {n}))\n(println (count page-{n}))'
        out.append(Turn.succeeded(n, program, len(page), memory=Memory(memory, docs=docs),
                                  prints=[str(len(page))],
                                  tool_calls=[ToolCall("read-log", (n,), page)]))
    return Trace(mission="Find the service that logs the most errors.", turns=tuple(out),
                 max_turns=turns, tools={"read-log": {"description": "one page of logs",
                                                      "params": {"page": "integer"},
                                                      "returns": "list"}},
                 name=f"logs-{turns}")


def measure(trace: Trace, version: int, directory: Path, repeat: int) -> tuple[int, float]:
    """File size in bytes and best load time in seconds."""
    path = directory / f"{trace.name}-v{version}.json"
    save_trace(trace, path, version=version)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        loaded = load_trace(path)
        best = min(best, time.perf_counter() - start)
    assert len(loaded.turns) == len(trace.turns)
    assert loaded.turns[-1].memory == trace.turns[-1].memory
    return path.stat().st_size, best


def main() -> None:
    """Print the size / load-time table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cases = [("90 turns, all pages kept", synthetic_run(90, 13, None)),
             ("100 turns, all pages kept", synthetic_run(100, 13, None)),
             ("1000 turns, last 30 pages kept", synthetic_run(1000, 4, 30))]
    print(f"{'case':32} {'v1 size':>10} {'v2 size':>10} {'size v1/v2':>10} "
          f"{'v1 load s':>10} {'v2 load s':>10} {'load v1/v2':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        for label, trace in cases:
            s1, t1 = measure(trace, 1, Path(tmp), args.repeat)
            s2, t2 = measure(trace, 2, Path(tmp), args.repeat)
            print(f"{label:32} {s1 / 1e6:>8.2f}MB {s2 / 1e6:>8.2f}MB {s1 / s2:>9.1f}x "
                  f"{t1:>10.3f} {t2:>10.3f} {t1 / t2:>9.1f}x")
            if label.startswith("90"):
                verdict = "meets" if s2 < 1.5e6 else "MISSES"
                print(f"{'':32} target: version 2 under 1.5 MB -> {verdict}")


if __name__ == "__main__":
    main()
