"""``turnpress compare`` on real transcripts: cache-model calibration and speed (not a test).

Reads the shared corpus of real mini-swe-agent runs (``../shared/corpus/mini-swe-agent/``
relative to the repository root, or ``/work/shared/corpus/mini-swe-agent/``; skipped
with a message when it is absent, or when no installed reader reads the format).

1. **Calibration** (issue 9 item 5): for each run, the cached share of prompt tokens
   that the ``openai`` cache model gives ``full-history`` beside the share the
   provider really billed (``Turn.usage``), for the median run and for the corpus
   total. Shares, not token counts, are compared: the provider's tokenizer is not
   o200k. Target: within 3 percentage points.
2. **Speed** (issue 20 item 4): the floor is what no exact comparison can skip:
   reading the runs, and counting each distinct message of the compared prompts once
   (the strategies that rewrite one message every turn make ~19x the runs' own text).
   ``compare`` over every run, all strategies, ``--jobs 2``, against it. Target: at
   most 8x, both measured in this one run, in CPU seconds (a busy machine stretches
   wall time; the wall ratio is printed beside it). Each is measured three times, in
   turn, and the medians are compared (the floor is a second of work, which a shared
   machine's other work can stretch by half; each round's ratio is printed too).
3. **Where the time goes**: ``compare --jobs 1`` as it is, then again with its parts
   timed (rendering, counting, retention, recall, the cache model); the engine's own
   loop is the rest of the first run's time (the timers' own time is left out); the
   floor's counting is its own line, taken out of the counting.

Run: ``python benchmarks/bench_transcripts.py [CORPUS_DIR]``.
"""

from __future__ import annotations

import functools
import os
import resource
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from turnpress import load_trace
from turnpress.compare import compare_traces
from turnpress.core.tokens import message_body, message_text
from turnpress.core.trace import Trace, TraceError

ROOT = Path(__file__).resolve().parent.parent
CANDIDATES = (ROOT.parent / "shared" / "corpus" / "mini-swe-agent",
              Path("/work/shared/corpus/mini-swe-agent"))


def corpus_paths(directory: str | None = None) -> list[Path]:
    """The ``*.traj.json`` runs of the corpus directory (empty when it is absent)."""
    for candidate in ([Path(directory)] if directory else CANDIDATES):
        paths = sorted(candidate.glob("*.traj.json"))
        if paths:
            return paths
    return []


def load_runs(paths: list[Path]) -> list[Trace] | None:
    """The runs as traces, or None (with a message) when turnpress cannot read them."""
    try:
        return [load_trace(p) for p in paths]
    except TraceError as exc:
        print(f"skipped: turnpress cannot read the corpus yet ({exc}); the mini-swe-agent "
              f"reader (turnpress/plugins/readers/) is needed")
        return None


def distinct_messages(traces: list[Trace]) -> list[str]:
    """Every distinct message of the runs, as counted (``<|role|>\\n{body}\\n``)."""
    seen: dict[str, None] = {}
    for trace in traces:
        for m in [*trace.preamble, *(m for t in trace.turns for m in t.messages)]:
            seen.setdefault(message_text(m["role"], message_body(m)), None)
    return list(seen)


def distinct_bodies(traces: list[Trace]) -> list[str]:
    """The bodies of :func:`distinct_messages` (what the floor tokenizes, without the role
    markers)."""
    seen: dict[str, None] = {}
    for trace in traces:
        for m in [*trace.preamble, *(m for t in trace.turns for m in t.messages)]:
            seen.setdefault(message_body(m), None)
    return list(seen)


def calibration(traces: list[Trace]) -> None:
    """Modelled (openai cache model, full-history) vs billed cached share."""
    result = compare_traces(traces, ["full-history"], cache="openai")
    full = result.strategies[0]
    modelled: dict[int, list[int]] = {}
    for trace_index, _turn, tokens, cached, _written, _r in full.rows():
        entry = modelled.setdefault(trace_index, [0, 0])
        entry[0] += tokens
        entry[1] += cached
    print("calibration: cached share of prompt tokens, full-history, openai cache model "
          "(o200k) vs billed (provider's tokenizer)")
    rows = []
    for i, info in enumerate(result.traces):
        if info.as_run is None:
            print(f"  {info.name}: no billed usage, left out")
            continue
        tokens, cached = modelled[i]
        model, billed = cached / tokens, info.as_run.cached_share
        rows.append((model, billed))
        print(f"  {info.name:42} {info.turns:4} turns  model {model:6.1%}  billed {billed:6.1%}"
              f"  diff {100 * (model - billed):+5.1f} pp")
    if not rows:
        print("  no run carries billed usage")
        return
    model_median = statistics.median(m for m, _ in rows)
    billed_median = statistics.median(b for _, b in rows)
    run = result.as_run
    assert run is not None
    total_model = full.cached_share
    total_billed = run.cached_share
    for label, m, b in (("median run", model_median, billed_median),
                        ("corpus total", total_model, total_billed)):
        diff = 100 * (m - b)
        verdict = "OK" if abs(diff) <= 3 else "MISSED"
        print(f"  {label:13} model {m:6.2%}  billed {b:6.2%}  diff {diff:+.2f} pp "
              f"(target within 3 pp: {verdict})")


def cpu_now() -> float:
    """CPU seconds of this process and of its children that have ended (the workers of a
    process pool, once it is shut down)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def floor_texts(traces: list[Trace]) -> tuple[list[str], int]:
    """Every distinct message of the compared prompts (all strategies, every run), as
    counted (``<|role|>\\n{body}\\n``): what the floor counts; and the characters of
    their bodies."""
    kept = compare_traces(traces, None, jobs=1, keep_prompts=len(traces))
    seen: dict[tuple[str, str], None] = {}
    for trace_prompts in kept.kept_prompts:
        for per_strategy in trace_prompts.prompts:
            for messages in per_strategy:
                for m in messages:
                    seen.setdefault((m["role"], message_body(m)), None)
    return [message_text(role, body) for role, body in seen], sum(len(b) for _, b in seen)


def floor_parts(paths: list[Path], texts: list[str]) -> tuple[float, float]:
    """The parts no exact comparison can skip (issue 20 item 4: the floor), in CPU
    seconds: reading the runs, and counting each distinct message of the compared
    prompts (``texts``) once (each distinct line encoded once, as the engine's line
    cache does, without its digests; a new counter, so nothing is known yet)."""
    from turnpress.core.tokens import TokenCounter

    start = time.process_time()
    for p in paths:
        load_trace(p)
    reading = time.process_time() - start
    encode_lines = TokenCounter("o200k_base")._encode_pieces
    start = time.process_time()
    for text in texts:
        encode_lines(text)
    return reading, time.process_time() - start


ROUNDS = 3
"""How many times the floor and compare are each measured (:func:`speed`)."""

#: where ``compare``'s own time goes: (category, module, class, method) timed in one
#: process; a part called inside another is taken out of that one's time
PARTS = (
    ("rendering the strategies' prompts", "engine", "_Worker", "_render"),
    ("checking each prompt against the previous", "reuse", "PromptTrack", "same"),
    ("the render context of each turn", "engine", "_Worker", "_context"),
    ("counting tokens", "counting", "PromptCounter", "tokenize"),
    ("cache breakpoints", "counting", "PromptCounter", "points"),
    ("retention: searching facts", "fact_index", "FactIndex", "shown"),
    ("retention: searching facts", "fact_index", "FactIndex", "shown_tracked"),
    ("retention: searching facts", "fact_index", "FactIndex", "ids"),
    ("retention: searching facts", "fact_index", "FactIndex", "track"),
    ("retention: searching facts", "fact_index", "FactIndex", "__init__"),
    ("retention: the run's facts per turn", "fact_index", "RunFacts", "pairs"),
    ("recall: needed facts", "fact_index", "FactIndex", "shows"),
    ("recall: needed facts", "needed_facts", "NeededFacts", "__init__"),
    ("recall: needed facts", "needed_facts", "NeededFacts", "for_turn"),
    ("the prompt-cache model", "cache", "OpenAICache", "account"),
)


def breakdown(traces: list[Trace]) -> tuple[float, dict[str, float], float]:
    """CPU seconds of ``compare --jobs 1`` on ``traces``, of each part of it
    (:data:`PARTS`: a part called inside one of another category counts for its own,
    not for the outer one; inside one of its own category, for the outer one; the rest
    is the engine's own loop), and of the timing itself: ``compare`` runs once as it is
    (the total) and once timed (the parts); the timed run's extra CPU is the timers'
    own, which would otherwise land in the engine's loop, around the parts it calls."""
    import importlib

    spent: dict[str, float] = defaultdict(float)
    stack: list[list[Any]] = []  # [category, seconds of inner parts] of the calls timed
    saved = []

    def timed(category: str, method: Any) -> Any:
        @functools.wraps(method)
        def call(*args: Any, **kwargs: Any) -> Any:
            if stack and stack[-1][0] == category:
                return method(*args, **kwargs)
            stack.append([category, 0.0])
            start = time.process_time()
            try:
                return method(*args, **kwargs)
            finally:
                took = time.process_time() - start
                _, inner = stack.pop()
                spent[category] += took - inner
                if stack:
                    stack[-1][1] += took
        return call

    start = time.process_time()
    compare_traces(traces, None, jobs=1)
    total = time.process_time() - start
    for category, module, cls_name, name in PARTS:
        cls = getattr(importlib.import_module(f"turnpress.compare.{module}"), cls_name)
        saved.append((cls, name, cls.__dict__[name]))
        setattr(cls, name, timed(category, cls.__dict__[name]))
    try:
        start = time.process_time()
        compare_traces(traces, None, jobs=1)
        timed_total = time.process_time() - start
    finally:
        for cls, name, method in saved:
            setattr(cls, name, method)
    return total, dict(spent), max(0.0, timed_total - total)


def speed(paths: list[Path], traces: list[Trace]) -> None:
    """compare (all strategies, --jobs 2) against the floor: reading the runs and counting
    each distinct message of the compared prompts once. Target: at most 8x, in CPU
    seconds (compare's driver and workers against the floor's parts; on an idle machine
    with two cores, wall time over half the floor's CPU gives the same ratio), and in
    wall time as the issue measured it. Each is measured :data:`ROUNDS` times, floor and
    compare in turn, and the ratio is that of the medians (a shared machine's other work
    lands on one round or another; the rounds' own ratios are printed beside it). Then
    where the rest of the time goes."""
    texts, chars = floor_texts(traces)
    floors: list[float] = []
    readings: list[float] = []
    cpus: list[float] = []
    walls: list[float] = []
    for _ in range(ROUNDS):
        reading, counting = floor_parts(paths, texts)
        readings.append(reading)
        floors.append(reading + counting)
        cpu, wall = cpu_now(), time.perf_counter()
        result = compare_traces(paths, None, jobs=2)
        cpus.append(cpu_now() - cpu)
        walls.append(time.perf_counter() - wall)
    floor, reading = statistics.median(floors), statistics.median(readings)
    counting = floor - reading
    took_cpu, took = statistics.median(cpus), statistics.median(walls)
    floor_chars = sum(len(b) for b in distinct_bodies(traces))
    print(f"floor: reading the {len(paths)} runs {reading:.2f} s CPU + counting the "
          f"{len(texts):,} distinct messages of the compared prompts once ({chars / 1e6:.1f} M "
          f"characters, {chars / max(1, floor_chars):.0f}x the runs' own) {counting:.2f} s "
          f"CPU = {floor:.2f} s CPU (median of {ROUNDS} rounds: "
          f"{', '.join(f'{f:.2f}' for f in floors)})")
    ratio = took_cpu / floor
    print(f"speed: compare, {len(result.compared)} strategies, {result.prompts} prompts each, "
          f"--jobs 2: {took:.2f} s wall, {took_cpu:.2f} s CPU (driver and workers; median of "
          f"{ROUNDS} rounds: {', '.join(f'{c:.2f}' for c in cpus)})")
    rounds = ", ".join(f"{c / f:.2f}x" for c, f in zip(cpus, floors, strict=True))
    print(f"       ratio compare / floor, CPU: {ratio:.2f}x (target at most 8x: "
          f"{'OK' if ratio <= 8 else 'MISSED'}; each round's own: {rounds})")
    print(f"       ratio compare / floor, wall over the floor's parts on 2 processes: "
          f"{took / (floor / 2):.2f}x (load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores: on a busy machine this one measures the others too)")
    for label, status, reason in result.not_compared:
        print(f"       {label}: {status}: {reason}")
    total, spent, timing = breakdown(traces)
    print(f"where compare's time goes (--jobs 1, {total:.2f} s CPU = {total / floor:.2f}x the "
          f"floor; the runs are read already, so the floor's part of it is its counting; the "
          f"parts timed in a second run, whose timers took {timing:.2f} s more, left out):")
    rest = max(0.0, total - sum(spent.values()))
    spent["counting tokens past the floor's share"] = spent.pop("counting tokens") - counting
    spent["the floor: counting each message once"] = counting
    for category, seconds in sorted([*spent.items(), ("the engine's own loop, results",
                                                      rest)], key=lambda kv: -kv[1]):
        print(f"       {category:42} {seconds:6.2f} s  {seconds / total:4.0%}  "
              f"{seconds / floor:5.2f}x the floor")
    extra = took_cpu - total
    print(f"       --jobs 2 over --jobs 1: {extra:+.2f} s CPU ({extra / floor:+.2f}x the floor; "
          f"the workers also read the runs, {reading:.2f} s; the rest is the same work run "
          f"two processes at a time, slower per CPU second on shared cores and caches)")


def main(directory: str | None = None) -> None:
    """Calibration, then speed."""
    paths = corpus_paths(directory)
    if not paths:
        print("skipped: the shared corpus (../shared/corpus/mini-swe-agent/ or "
              "/work/shared/corpus/mini-swe-agent/) is not here")
        return
    traces = load_runs(paths)
    if traces is None:
        return
    print(f"corpus: {len(paths)} mini-swe-agent runs from {paths[0].parent}, "
          f"{sum(len(t.turns) for t in traces)} turns")
    calibration(traces)
    speed(paths, traces)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
