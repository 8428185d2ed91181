"""``turnpress compare`` on real transcripts: cache-model calibration and speed (not a test).

Reads the shared corpus of real mini-swe-agent runs (``../shared/corpus/mini-swe-agent/``
relative to the repository root, or ``/work/shared/corpus/mini-swe-agent/``; skipped
with a message when it is absent, or when no installed reader reads the format).

1. **Calibration** (issue 9 item 5): for each run, the cached share of prompt tokens
   that the ``openai`` cache model gives ``full-history`` beside the share the
   provider really billed (``Turn.usage``), for the median run and for the corpus
   total. Shares, not token counts, are compared: the provider's tokenizer is not
   o200k. Target: within 3 percentage points.
2. **Speed** (issue 9 item 9): the time of ``compare`` over every run, all strategies,
   ``jobs=2``, against the floor: tokenizing every distinct message of those runs
   once. Target: at most 3x. Both are measured in this one run.
3. **Budget**: what that 3x leaves for the comparison's own work once the parts no
   exact comparison can skip are paid: reading the runs, and counting each distinct
   message of the compared prompts once (the strategies that rewrite one message every
   turn make ~19x the floor's characters of distinct text), plus one minimal Jinja
   render per prompt. On this corpus those parts alone take more than the 3x.

Run: ``python benchmarks/bench_transcripts.py [CORPUS_DIR]``.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from turnpress import load_trace
from turnpress.compare import compare_traces
from turnpress.core.tokens import get_tokenizer, message_body, message_text
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


def render_seconds(traces: list[Trace], strategies: list[str]) -> float:
    """Seconds (one process) to render every prompt of every run under ``strategies``:
    the strategies' own share of the comparison's work."""
    from turnpress.core.compression import RenderContext, get_strategy

    start = time.perf_counter()
    for name in strategies:
        strategy = get_strategy(name)
        for trace in traces:
            for n in range(1, len(trace.turns) + 1):
                args = trace.prompt_arguments(n)
                ctx = RenderContext(mission=trace.mission, system_prompt=trace.system_prompt,
                                    tools=trace.tools, data=trace.data,
                                    turns_left=args["turns_left"], preamble=trace.preamble)
                turns = args["turns"]
                try:
                    strategy.to_messages(turns, turns[-1].memory if turns else {}, ctx)
                except Exception:  # n/a or failing: compare reports it
                    break
    return time.perf_counter() - start


def speed(paths: list[Path], traces: list[Trace]) -> None:
    """compare (all strategies, jobs=2) against tokenizing each distinct message once."""
    texts = distinct_messages(traces)
    encode = get_tokenizer("o200k_base").encode
    assert encode is not None
    start = time.perf_counter()
    tokens = sum(len(encode(t)) for t in texts)
    floor = time.perf_counter() - start
    start = time.perf_counter()
    result = compare_traces(paths, None, jobs=2)
    took = time.perf_counter() - start
    print(f"speed: {len(texts):,} distinct messages ({tokens:,} tokens) tokenized once: "
          f"{floor:.2f} s")
    print(f"       compare, {len(result.compared)} strategies, {result.prompts} prompts each, "
          f"--jobs 2: {took:.2f} s")
    verdict = "OK" if took <= 3 * floor else "MISSED"
    print(f"       ratio compare / floor: {took / floor:.2f}x (target at most 3x: {verdict})")
    start = time.perf_counter()
    cpu = time.process_time()
    compare_traces(traces, None, jobs=1)
    alone, alone_cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"       compare --jobs 1 (traces already loaded): {alone:.2f} s, {alone_cpu:.2f} s CPU "
          f"= {alone_cpu / floor:.0f}x the floor (on a busy machine --jobs 2 gains little)")
    rendering = render_seconds(traces, [s.label for s in result.compared])
    print(f"       of which the strategies' rendering alone (one process, every prompt): "
          f"{rendering:.2f} s CPU = {rendering / floor:.0f}x the floor")
    for label, status, reason in result.not_compared:
        print(f"       {label}: {status}: {reason}")
    budget(paths, traces, floor, took)


def budget(paths: list[Path], traces: list[Trace], floor: float, took: float) -> None:
    """What the 3x target leaves for the comparison's own work, from parts measured here
    that no exact comparison of these prompts can skip: reading the runs, and counting
    every distinct message of every compared prompt once, each distinct line encoded
    once (the engine's line cache, without its digests: cheaper than encoding whole
    messages, and a lower bound on the engine's counting)."""
    import jinja2

    from turnpress.core.tokens import TokenCounter

    start = time.perf_counter()
    for p in paths:
        load_trace(p)
    reading = time.perf_counter() - start
    kept = compare_traces(traces, None, jobs=1, keep_prompts=len(traces))
    seen: dict[tuple[str, str], None] = {}
    prompts = 0
    for trace_prompts in kept.kept_prompts:
        for per_strategy in trace_prompts.prompts:
            for messages in per_strategy:
                prompts += bool(messages)
                for m in messages:
                    seen.setdefault((m["role"], message_body(m)), None)
    texts = [message_text(role, body) for role, body in seen]
    chars = sum(len(body) for _, body in seen)
    # the counter's line cache alone, for every text: no digests, no Segment objects
    encode_lines = TokenCounter("o200k_base")._encode_pieces
    start = time.perf_counter()
    for text in texts:
        encode_lines(text)
    counting = time.perf_counter() - start
    template = jinja2.Environment().from_string("{{ a }} of {{ b }}")
    start = time.perf_counter()
    for i in range(prompts):
        template.render(a=i, b=prompts)
    jinja = time.perf_counter() - start
    cpu = 3 * floor * 2  # 3x the floor on each of 2 worker processes
    fixed = reading + counting
    left = cpu - fixed - jinja
    print(f"budget: 3x the floor with --jobs 2 is {cpu:.2f} s CPU for {prompts:,} prompts; "
          f"parts no exact comparison skips:")
    print(f"       reading the {len(paths)} runs: {reading:.2f} s; counting the "
          f"{len(seen):,} distinct messages of the compared prompts ({chars / 1e6:.1f} M "
          f"characters, {chars / max(1, sum(len(b) for b in distinct_bodies(traces))):.0f}x "
          f"the floor's) once: {counting:.2f} s")
    print(f"       = {fixed / floor:.1f}x the floor in CPU; one minimal Jinja render per "
          f"prompt adds {jinja:.2f} s")
    print(f"       left for rendering, retention, recall and the cache model: "
          f"{max(left, 0.0):.2f} s CPU = {max(left, 0.0) / prompts * 1e6:.0f} us per prompt")
    print(f"       compare --jobs 2 took {took / (fixed / 2):.1f}x those parts on 2 processes "
          f"({fixed / 2:.2f} s)")


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
