"""The coalesced strategies (``single-user-coalesced``, ``aggressive``,
``checkpoint-coalesced``) remember their per-turn work for the run
(``RenderContext.per_turn``): prompt n reuses what prompt n-1 made. These tests pin
that the memo never changes a prompt (whatever the order of calls, prefix, mission or
turn budget) and that it really saves the work (issue 9 item 9)."""

from __future__ import annotations

import copy

import pytest
from test_strategies_transcripts import transcript

from turnpress import Failure, ToolCall, Turn
from turnpress.core.compression import RenderContext, get_strategy, strategy_names
from turnpress.core.trace import Trace
from turnpress.plugins.checkpoint_coalesced import CheckpointCoalesced

SPECS = ["single-user-coalesced", "single-user-coalesced:errors=pairs", "aggressive",
         "checkpoint-coalesced", "checkpoint-coalesced:every=3,delta_chars=300",
         "checkpoint-coalesced:every=4,turn_lines=0,output_lines=2,key_lines=1"]


def _turn(n: int, memory: dict) -> Turn:
    """A PTC-Lisp turn: prints with names (``field_n``), a tool call, every fifth fails."""
    memory = {**memory, f"v{n}": n}
    prints = ("\n".join([f"row {n}", *(f"  field_{i}.key_{n % 3} = {i}" for i in range(n % 7)),
                         f"end {n}"]),)
    calls = (ToolCall("search", (f"q{n}", n)),)
    if n % 5 == 0:
        return Turn.failed(n, f"(boom {n})", Failure("undefined_symbol", f"no boom {n}"),
                           memory=memory, tool_calls=calls, raw_response=f"(boom {n})")
    return Turn.succeeded(n, f"(def v{n} {n})", n, memory=memory, prints=prints,
                          tool_calls=calls, raw_response=f"```clojure\n(def v{n} {n})\n```")


def ptc_run(count: int = 14) -> Trace:
    turns: list[Turn] = []
    for n in range(1, count + 1):
        turns.append(_turn(n, turns[-1].memory if turns else {}))
    return Trace("Find the field names.", turns, "sys", count + 3)


def _render(trace: Trace, spec: str, n: int, *, mission: str | None = None,
            turns: tuple[Turn, ...] | None = None,
            turns_left: int | None = None, system: str | None = None
            ) -> tuple[list, list]:
    args = trace.prompt_arguments(n)
    turns = args["turns"] if turns is None else turns
    ctx = RenderContext(mission=args["mission"] if mission is None else mission,
                        system_prompt=args["system_prompt"], tools=args["tools"],
                        data=args["data"],
                        turns_left=args["turns_left"] if turns_left is None else turns_left,
                        preamble=args["preamble"] if system is None else (
                            {"role": "system", "content": system}, *args["preamble"][1:]))
    strategy = get_strategy(spec)
    memory = turns[-1].memory if turns else {}
    return (strategy.to_messages(turns, memory, ctx),
            strategy.cache_breakpoints(turns, memory, ctx))


def _fresh(trace: Trace, spec: str, n: int, **kwargs) -> tuple[list, list]:
    """The prompt from a copy of the run (new turn objects; a new ``data`` object, so a
    new run cache)."""
    twin = copy.deepcopy(trace)
    assert twin.data is not trace.data
    if "turns" in kwargs:
        kwargs["turns"] = tuple(twin.turns[trace.turns.index(t)] for t in kwargs["turns"])
    return _render(twin, spec, n, **kwargs)


RUNS = {"ptc": ptc_run, "transcript": lambda: transcript(n_extra=8)}


@pytest.mark.parametrize("run", sorted(RUNS))
@pytest.mark.parametrize("spec", SPECS)
def test_prompts_in_any_order_equal_fresh_renders(run: str, spec: str) -> None:
    trace = RUNS[run]()
    last = len(trace.turns) + 1
    fresh = {n: _fresh(trace, spec, n) for n in range(1, last + 1)}
    for order in (range(last, 0, -1), range(1, last + 1), [7, 2, last, 3, 7]):
        for n in order:
            assert _render(trace, spec, n) == fresh[n], (spec, n)


@pytest.mark.parametrize("run", sorted(RUNS))
@pytest.mark.parametrize("spec", SPECS)
def test_same_turns_in_another_prefix_budget_or_mission_are_rendered_afresh(
        run: str, spec: str) -> None:
    """The memo is keyed by the whole prefix of turns, the turn budget and the mission:
    the same turn objects after other turns (or none), under another budget or
    mission, give what a fresh render gives."""
    trace = RUNS[run]()
    last = len(trace.turns) + 1
    for n in range(1, last + 1):
        _render(trace, spec, n)  # fill the memo
    turns = tuple(trace.turns)
    for variant in ({"turns": turns[3:]}, {"turns": turns[:2] + turns[5:]},
                    {"turns_left": 50}, {"mission": "Another mission."},
                    *([{"system": "Another system prompt."}] if trace.preamble else [])):
        full = len(turns)
        assert _render(trace, spec, full + 1, **variant) == \
            _fresh(trace, spec, full + 1, **variant), (spec, variant)


def test_checkpoint_deltas_and_views_are_made_once_per_run(monkeypatch) -> None:
    """Rendering every prompt (messages and breakpoints) makes each turn's delta once
    and each checkpoint's view once, not once per later prompt."""
    made: dict[str, list] = {"delta": [], "view": []}
    delta, coalesced = CheckpointCoalesced.delta, CheckpointCoalesced.coalesced

    def counting_delta(self, ctx, turns, pos, seen=None):
        made["delta"].append(turns[pos - 1].number)
        return delta(self, ctx, turns, pos, seen)

    def counting_view(self, turns, c, ctx, previous=0):
        made["view"].append(c)
        return coalesced(self, turns, c, ctx, previous)

    monkeypatch.setattr(CheckpointCoalesced, "delta", counting_delta)
    monkeypatch.setattr(CheckpointCoalesced, "coalesced", counting_view)
    trace = ptc_run(20)
    spec = "checkpoint-coalesced:every=4,delta_chars=0"
    for n in range(1, len(trace.turns) + 2):
        _render(trace, spec, n)
    checkpoints = [4, 8, 12, 16, 20]
    assert sorted(made["delta"]) == [n for n in range(1, 21) if n not in checkpoints]
    assert sorted(c for c in made["view"] if c) == checkpoints


@pytest.mark.parametrize("spec", ["checkpoint-coalesced:every=3", *strategy_names()])
def test_a_used_strategy_still_copies_and_pickles(spec) -> None:
    """compare sends strategies to worker processes: what an instance remembers of its
    last prompt (the run's cache, with a lock and the plugin registry) is copied as an
    empty cache of no run (every strategy but checkpoint-coalesced failed to pickle
    once it had rendered)."""
    import pickle

    strategy = get_strategy(spec)
    trace = ptc_run(6)
    args = trace.prompt_arguments(7)
    ctx = RenderContext(mission=args["mission"], system_prompt="sys", tools=args["tools"],
                        data=args["data"], turns_left=args["turns_left"])
    expected = strategy.to_messages(args["turns"], {}, ctx)
    for twin in (pickle.loads(pickle.dumps(strategy)), copy.deepcopy(strategy),
                 copy.copy(strategy)):
        assert twin == strategy
        assert twin.to_messages(args["turns"], {}, ctx) == expected


def test_transcript_pieces_are_cut_and_rendered_once_per_turn(monkeypatch) -> None:
    """single-user-coalesced and aggressive on a transcript: each turn's outputs are
    cut, and its tool-call arguments rendered, once per run and set of limits (a window
    of tool calls: its length), not once per later prompt; cut_feedback returns the same
    message objects each time."""
    from turnpress.plugins import _imported_messages

    cuts: list[str] = []
    cut_middle = _imported_messages.cut_middle

    def counting_cut(text, ctx, **limits):
        cuts.append(text)
        return cut_middle(text, ctx, **limits)

    calls: list[int] = []
    json_argument = _imported_messages.json_argument  # a transcript's arguments are JSON

    def counting_arguments(value, limit=None):
        calls.append(1)
        return json_argument(value, limit)

    monkeypatch.setattr(_imported_messages, "cut_middle", counting_cut)
    monkeypatch.setattr(_imported_messages, "json_argument", counting_arguments)
    trace = transcript(n_extra=8)
    contents = sum(1 for t in trace.turns for m in t.messages
                   if m["role"] == "tool" and m["content"])
    arguments = sum(len(c.args) for t in trace.turns for c in t.tool_calls)
    for spec in ("single-user-coalesced", "aggressive"):
        for n in range(1, len(trace.turns) + 2):
            _render(trace, spec, n)
    assert len(cuts) == 2 * contents  # two sets of limits, each content once
    assert len(calls) == 2 * arguments  # two windows (tool_call_limit), each call once
    args = trace.prompt_arguments(3)
    ctx = RenderContext(mission="m", system_prompt="", tools=args["tools"],
                        data=args["data"], turns_left=3)
    first = _imported_messages.cut_feedback(trace.turns[1], ctx)
    again = _imported_messages.cut_feedback(trace.turns[1], ctx)
    assert first == again and first is not again
    assert all(a is b for a, b in zip(first, again, strict=True))
    assert "lines elided" in first[1]["content"]


@pytest.mark.parametrize("spec", ["rolling-window:window=1,step=2",
                                  "checkpoint-coalesced:every=3,delta_chars=0"])
def test_only_the_current_coalesced_view_is_kept(spec) -> None:
    """A long run's prompts do not keep one coalesced view per boundary (rolling-window)
    or checkpoint (checkpoint-coalesced) they passed: the run's cache keeps the current
    one only, and it is the one the last prompt shows (issue 20 item 6)."""
    trace = ptc_run(20)
    for n in range(1, len(trace.turns) + 2):
        messages, _ = _render(trace, spec, n)
    args = trace.prompt_arguments(len(trace.turns) + 1)
    ctx = RenderContext(mission=args["mission"], system_prompt=args["system_prompt"],
                        tools=args["tools"], data=args["data"], turns_left=args["turns_left"])

    def view(value: object) -> bool:  # a value ending with messages that start a prompt
        return (type(value) in (list, tuple) and bool(value)  # type: ignore[arg-type]
                and type(value[-1]) in (list, tuple) and bool(value[-1])  # type: ignore[index]
                and all(type(m) is dict for m in value[-1])  # type: ignore[index]
                and value[-1][0].get("role") == "system")  # type: ignore[index]

    views = [value for _, value in ctx.run_cache.per_turn.values() if view(value)]
    assert len(views) == 1
    kept = views[0][-1]
    assert [dict(m) for m in kept] == messages[:len(kept)]
