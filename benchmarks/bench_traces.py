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

Then (issue 23) a value of shared structure: 1,500 nested sets, each holding all the
smaller ones (``--sets``), 1.1 million references in 1,501 sets, made by the sandbox
as ``(loop [x #{} i 0] (if (< i 1500) (recur (conj x x) (inc i)) x))``. A one-turn
trace holding it is saved and loaded (best of ``--repeat``), and compared with
``json.dumps`` of the same structure written as a reference list (each set as the
list of its items' indices). Targets: save + load under 3 s, and at least 1 million
references a second each way. Wall-clock and CPU seconds are both shown: on a shared
machine the CPU time is the steadier of the two.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from turnpress.core.codec import same_value
from turnpress.core.model import Keyword, Memory, ToolCall, Turn
from turnpress.core.trace import Trace, load_trace, save_trace
from turnpress.lisp import run_program

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


def nested_sets(n: int) -> Any:
    """issue 23's value: ``n`` nested sets, each holding all the smaller ones."""
    program = f"(def a (loop [x #{{}} i 0] (if (< i {n}) (recur (conj x x) (inc i)) x)))"
    return run_program(program).memory["a"]


def reference_list(value: Any) -> list[list[int]]:
    """The sets inside ``value`` (and itself), each as the list of its items' indices,
    smaller sets first: the same structure as plain JSON, for ``json.dumps``."""
    order: list[Any] = []
    index: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        v, done = stack.pop()
        if id(v) in index:
            continue
        if done:
            index[id(v)] = len(order)
            order.append(v)
            continue
        stack.append((v, True))
        stack.extend((x, False) for x in v if id(x) not in index)
    return [[index[id(x)] for x in v] for v in order]


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """Best wall-clock and best CPU seconds of ``repeat`` calls, and the last result."""
    wall = cpu = float("inf")
    result = None
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        result = fn()
        wall, cpu = min(wall, time.perf_counter() - w), min(cpu, time.process_time() - c)
    return wall, cpu, result


def shared_value(sets: int, repeat: int, directory: Path) -> None:
    """Print save / load of the nested sets against ``json.dumps`` of their reference
    list, with the ratios and the issue 23 targets."""
    value = nested_sets(sets)
    refs_list = reference_list(value)
    refs = sum(map(len, refs_list))
    trace = Trace(mission="nested sets", max_turns=1, turns=(Turn.succeeded(
        1, "(def a ...)", None, memory={"a": value}),))
    path = directory / "nested-sets.json"

    def save() -> None:
        path.unlink(missing_ok=True)
        save_trace(trace, path)

    ref_wall, ref_cpu, _ = best_of(repeat, lambda: json.dumps(refs_list))
    save_wall, save_cpu, _ = best_of(repeat, save)
    load_wall, load_cpu, loaded = best_of(repeat, lambda: load_trace(path))
    assert same_value(loaded.turns[0].memory["a"], value)
    print(f"\n{sets} nested sets: {len(refs_list)} sets, {refs:,} references, "
          f"file {path.stat().st_size / 1e6:.1f} MB")
    print(f"{'':32} {'wall s':>10} {'cpu s':>10} {'refs/s (cpu)':>14} {'x json.dumps':>13}")
    for label, wall, cpu in (("json.dumps of the reference list", ref_wall, ref_cpu),
                             ("save_trace", save_wall, save_cpu),
                             ("load_trace", load_wall, load_cpu),
                             ("save + load", save_wall + load_wall, save_cpu + load_cpu)):
        print(f"{label:32} {wall:>10.3f} {cpu:>10.3f} {refs / cpu:>14,.0f} "
              f"{cpu / ref_cpu:>12.1f}x")
    rate = refs / max(save_cpu, load_cpu)
    for target, met in ((f"save + load under 3 s (cpu {save_cpu + load_cpu:.2f} s)",
                         save_cpu + load_cpu < 3),
                        (f"at least 1M references/s each way ({rate:,.0f})", rate >= 1e6)):
        print(f"{'':32} target: {target} -> {'meets' if met else 'MISSES'}")


def main() -> None:
    """Print the size / load-time table, then the shared-value measurement."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sets", type=int, default=1500,
                        help="nested sets of the shared value (issue 23: 1500)")
    parser.add_argument("--shared-only", action="store_true",
                        help="only the shared-value measurement")
    args = parser.parse_args()
    if args.shared_only:
        with tempfile.TemporaryDirectory() as tmp:
            shared_value(args.sets, args.repeat, Path(tmp))
        return
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
        shared_value(args.sets, args.repeat, Path(tmp))


if __name__ == "__main__":
    main()
