"""The per-turn memo of full-history, progressive-batch, observation-masking,
clear-tool-uses and per-turn-summary (issue 9 item 9): a turn's rendering is made once
per run and reused by later prompts, and the prompts stay what a fresh render gives,
whatever order they are asked in."""

from __future__ import annotations

import json
from typing import Any

import pytest

from turnpress import load_trace
from turnpress.core.compression import RenderContext, get_strategy
from turnpress.core.trace import Trace
from turnpress.examples import example_trace_paths
from turnpress.plugins import clear_tool_uses
from turnpress.plugins.observation_masking import ObservationMasking
from turnpress.plugins.per_turn_summary import PerTurnSummary
from turnpress.plugins.progressive_batch import ProgressiveBatch
from turnpress.plugins.readers.openai_chat import trace_from_messages
from turnpress.plugins.rolling_window import RollingWindow
from turnpress.plugins.single_user_coalesced import SingleUserCoalesced

SPECS = ["full-history", "progressive-batch", "progressive-batch:batch_size=3,min_preserved=0",
         "observation-masking", "observation-masking:window=1,step=2",
         "clear-tool-uses:trigger=50,keep=2",
         "clear-tool-uses:trigger=50,keep=1,clear_tool_inputs=true,exclude_tools=grep",
         "per-turn-summary", "per-turn-summary:println_limit=1,tool_call_limit=1",
         "rolling-window:window=2,step=3"]


def _transcript(turns: int = 14) -> Trace:
    """A tool-calling run: parallel calls, long results, a user message now and then."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are an agent."},
                                      {"role": "user", "content": "Fix the tests."}]
    for n in range(1, turns + 1):
        calls = [{"id": f"c{n}_{k}", "type": "function", "function": {
            "name": "grep" if k else "bash", "arguments": json.dumps({"cmd": f"cat f{n}"})}}
            for k in range(1 + n % 2)]
        messages.append({"role": "assistant", "content": f"Step {n}.", "tool_calls": calls})
        for call in calls:
            lines = 60 if n % 3 else 2
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": "\n".join(
                f"{call['id']} line {i}: value {n * i}" for i in range(lines))})
        if n % 4 == 0:
            messages.append({"role": "user", "content": "Keep going.\n" * 30})
    messages.append({"role": "assistant", "content": "Done."})
    return trace_from_messages(messages)


def _lisp() -> Trace:
    """The bundled 32-turn PTC-Lisp run with failed turns."""
    path = next(p for p in example_trace_paths() if p.name.startswith("incident-triage"))
    return load_trace(path)


def _prompt(trace: Trace, strategy: Any, n: int, *, fresh: bool = False) -> str:
    """Prompt ``n`` and its breakpoints as JSON; ``fresh`` renders in a new run cache."""
    args = trace.prompt_arguments(n)
    tools, data = args["tools"], args["data"]
    if fresh:  # new mappings: a new run, nothing remembered
        tools, data = dict(tools), dict(data or {})
    ctx = RenderContext(mission=args["mission"], system_prompt=args["system_prompt"],
                        tools=tools, data=data, turns_left=args["turns_left"],
                        preamble=args["preamble"])
    turns = args["turns"]
    memory = turns[-1].memory if turns else {}
    messages = strategy.to_messages(turns, memory, ctx)
    return json.dumps([messages, strategy.cache_breakpoints(turns, memory, ctx)])


@pytest.mark.parametrize("make_trace", [_lisp, _transcript], ids=["lisp", "transcript"])
@pytest.mark.parametrize("spec", SPECS)
def test_prompts_in_any_order_equal_fresh_renders(make_trace, spec) -> None:
    """Every prompt rendered 1..N then N..1 in one run equals a fresh render of it."""
    trace = make_trace()
    last = len(trace.turns) + 1
    fresh = {n: _prompt(trace, get_strategy(spec), n, fresh=True) for n in range(1, last + 1)}
    strategy = get_strategy(spec)
    for n in [*range(1, last + 1), *range(last, 0, -1)]:
        assert _prompt(trace, strategy, n) == fresh[n], f"{spec}, prompt {n}"
    reverse = make_trace()  # a new run asked last prompt first
    for n in range(last, 0, -1):
        assert _prompt(reverse, get_strategy(spec), n) == fresh[n], f"{spec}, prompt {n}"


def _count_calls(monkeypatch, owner: Any, name: str) -> list[Any]:
    """Patch ``owner.name`` to record its calls (first argument after self, if any)."""
    original = getattr(owner, name)
    calls: list[Any] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def _every_prompt(trace: Trace, spec: str) -> None:
    strategy = get_strategy(spec)
    for n in range(1, len(trace.turns) + 2):
        _prompt(trace, strategy, n)


def test_progressive_batch_recaps_each_turn_once_per_run(monkeypatch) -> None:
    calls = _count_calls(monkeypatch, ProgressiveBatch, "recap")
    trace = _lisp()
    _every_prompt(trace, "progressive-batch")
    compacted = ProgressiveBatch().compacted_count(len(trace.turns))
    assert compacted > 20
    assert sorted(pos for _self, _ctx, _turns, pos in calls) == list(range(1, compacted + 1))


@pytest.mark.parametrize("make_trace", [_lisp, _transcript], ids=["lisp", "transcript"])
def test_observation_masking_masks_each_turn_once_per_run(monkeypatch, make_trace) -> None:
    calls = _count_calls(monkeypatch, ObservationMasking, "_masked_pair")
    trace = make_trace()
    _every_prompt(trace, "observation-masking:window=1,step=2")
    positions = [pos for _self, _ctx, _turns, pos in calls]
    assert positions and len(positions) == len(set(positions))


@pytest.mark.parametrize("make_trace", [_lisp, _transcript], ids=["lisp", "transcript"])
def test_full_history_and_per_turn_summary_make_each_pair_once(monkeypatch,
                                                                make_trace) -> None:
    feedback = _count_calls(monkeypatch, RenderContext, "feedback")
    copied = _count_calls(monkeypatch, PerTurnSummary, "_pair")
    trace = make_trace()
    _every_prompt(trace, "full-history")
    _every_prompt(trace, "per-turn-summary")
    expected = 0 if trace.turns[0].messages else len(trace.turns)
    assert len(feedback) == expected
    assert len(copied) == expected


def test_clear_tool_uses_reads_each_turn_once_per_run(monkeypatch) -> None:
    uses = _count_calls(monkeypatch, clear_tool_uses, "_uses")
    trace = _transcript()
    _every_prompt(trace, "clear-tool-uses:trigger=50,keep=2")
    assert sorted(id(turn) for (turn,) in uses) == sorted(id(t) for t in trace.turns)


@pytest.mark.parametrize("spec", ["full-history", "progressive-batch:min_preserved=0",
                                  "observation-masking:window=0,step=1", "per-turn-summary",
                                  "clear-tool-uses:trigger=0,keep=0"])
def test_later_prompts_reuse_the_same_message_objects(spec) -> None:
    """An unchanged turn is the same message objects in the next prompt (the compare
    engine skips work for messages it has seen)."""
    trace = _transcript()
    strategy = get_strategy(spec)
    prompts = []
    for n in (len(trace.turns), len(trace.turns) + 1):
        args = trace.prompt_arguments(n)
        ctx = RenderContext(mission=args["mission"], system_prompt=args["system_prompt"],
                            tools=args["tools"], data=args["data"],
                            turns_left=args["turns_left"], preamble=args["preamble"])
        prompts.append(strategy.to_messages(args["turns"], {}, ctx))
    before, after = prompts
    head = len(trace.preamble)
    assert after[head] is before[head] and after[head + 1] is before[head + 1]
    assert after[: len(before) - 1] == before[: len(before) - 1]


def test_a_different_predecessor_makes_the_recap_again() -> None:
    """A value that depends on the turn before (what the turn defined since) is not
    reused when the same turn follows another one."""
    trace = _lisp()
    pb = ProgressiveBatch(min_preserved=0, batch_size=1)
    args = trace.prompt_arguments(len(trace.turns) + 1)
    turns = args["turns"]
    pos = next(p for p in range(3, len(turns) + 1)
               if turns[p - 1].success and turns[p - 2].memory != turns[p - 3].memory
               and "recap -" not in turns[p - 1].raw_response)

    def context(tools: Any, data: Any, turns_left: int) -> RenderContext:
        return RenderContext(mission=args["mission"], system_prompt=args["system_prompt"],
                             tools=tools, data=data, turns_left=turns_left,
                             preamble=args["preamble"])

    ctx = context(args["tools"], args["data"], args["turns_left"])
    first = pb.compacted(ctx, turns, pos)
    # the same turn right after the turn two before it: same turns-left line, other names
    shifted = (*turns[: pos - 2], turns[pos - 1])
    shifted_ctx = context(args["tools"], args["data"], args["turns_left"] + len(turns) - pos)
    fresh_ctx = context(dict(args["tools"]), dict(args["data"]),
                        args["turns_left"] + len(turns) - pos)
    again = pb.compacted(shifted_ctx, shifted, pos - 1)
    assert again == pb.compacted(fresh_ctx, shifted, pos - 1)
    assert again != first
    assert pb.compacted(ctx, turns, pos) == first


@pytest.mark.parametrize("spec", SPECS)
def test_the_same_turns_with_other_turns_left_are_rendered_again(spec) -> None:
    """A PTC-Lisp turn's feedback ends with the turns-left line of its point: the same
    turns rendered in one run with another ``turns_left`` give the fresh prompts."""
    trace = _lisp()
    args = trace.prompt_arguments(len(trace.turns) + 1)
    turns = args["turns"]
    strategy = get_strategy(spec)
    for turns_left in (args["turns_left"], args["turns_left"] + 2, args["turns_left"]):
        prompts = []
        for tools, data in ((args["tools"], args["data"]),
                            (dict(args["tools"]), dict(args["data"]))):
            ctx = RenderContext(mission=args["mission"], system_prompt=args["system_prompt"],
                                tools=tools, data=data, turns_left=turns_left)
            prompts.append(json.dumps([strategy.to_messages(turns, turns[-1].memory, ctx),
                                       strategy.cache_breakpoints(turns, turns[-1].memory,
                                                                  ctx)]))
        assert prompts[0] == prompts[1], f"{spec}, turns_left={turns_left}"


@pytest.mark.parametrize("make_trace", [_lisp, _transcript], ids=["lisp", "transcript"])
def test_rolling_window_coalesces_once_per_boundary(monkeypatch, make_trace) -> None:
    """The coalesced part is rendered once each time the boundary moves, not per prompt."""
    calls = _count_calls(monkeypatch, SingleUserCoalesced, "to_messages")
    trace = make_trace()
    _every_prompt(trace, "rolling-window:window=2,step=3")
    strategy = RollingWindow(window=2, step=3)
    boundaries = {strategy.coalesced_count(n) for n in range(len(trace.turns) + 1)} - {0}
    assert len(boundaries) > 2
    assert sorted(len(turns) for _self, turns, _memory, _ctx in calls) == sorted(boundaries)


def test_turn_walk_makes_only_the_new_turns_pieces() -> None:
    """TurnWalk: the next prompt (one more turn) makes one piece; an earlier prompt
    makes none; another key, another run or another turn object walks again."""
    from dataclasses import replace

    from turnpress.plugins.full_history import TurnWalk

    trace = _lisp()
    args = trace.prompt_arguments(len(trace.turns) + 1)
    turns = args["turns"]
    ctx = RenderContext(mission="m", system_prompt="", tools=args["tools"],
                        data=args["data"], turns_left=1)
    walk: TurnWalk[tuple[int, str]] = TurnWalk()
    made: list[int] = []

    def pieces(upto: Any, key: Any = "k", context: RenderContext = ctx) -> Any:
        def make(pos: int, before: list[Any]) -> tuple[int, str]:
            made.append(pos)
            assert len(before) == pos - 1
            return (pos, upto[pos - 1].raw_response)

        return walk.pieces(context, upto, key, make)

    expected = [(pos, t.raw_response) for pos, t in enumerate(turns, 1)]
    for n in range(len(turns) + 1):
        assert list(pieces(turns[:n])) == expected[:n]
    assert made == list(range(1, len(turns) + 1))
    made.clear()
    assert list(pieces(turns[:5])) == expected[:5] and made == []
    assert list(pieces(turns[:5], key="other")) == expected[:5] and made == [1, 2, 3, 4, 5]
    made.clear()
    other_run = RenderContext(mission="m", system_prompt="", tools=dict(args["tools"]),
                              data=dict(args["data"]), turns_left=1)
    assert list(pieces(turns[:3], key="other", context=other_run)) == expected[:3]
    assert made == [1, 2, 3]
    made.clear()
    changed = (*turns[:2], replace(turns[2], raw_response="changed"), *turns[3:6])
    assert list(pieces(changed)) == [*expected[:2], (3, "changed"), *expected[3:6]]
    assert made == [1, 2, 3, 4, 5, 6]


def test_turn_fold_carries_the_last_value_on_and_keeps_only_the_last_ones() -> None:
    """TurnFold: the value of the last turn, as folding every turn from the first gives
    it, for the next prompt (one new value made), the same prompt asked for all but its
    last turns, an earlier prompt, another key and a replaced turn; only the values of
    the last KEEP turns are kept (a long run's earlier ones are not held alive)."""
    from dataclasses import replace

    from turnpress.plugins.full_history import TurnFold

    trace = _lisp()
    args = trace.prompt_arguments(len(trace.turns) + 1)
    turns = args["turns"]
    ctx = RenderContext(mission="m", system_prompt="", tools=args["tools"],
                        data=args["data"], turns_left=1)
    fold: TurnFold[tuple[str, ...]] = TurnFold()
    made: list[int] = []

    def value(upto: Any, key: Any = "k", count: int | None = None) -> Any:
        def make(pos: int, before: list[Any]) -> tuple[str, ...]:
            made.append(pos)
            assert bool(before) == (pos > 1) and len(before) <= TurnFold.KEEP
            return (*before[-1], upto[pos - 1].raw_response)[-3:] if before else (
                upto[0].raw_response,)

        return fold.value(ctx, upto, key, make, count)

    def folded(upto: Any) -> tuple[str, ...]:
        return tuple(t.raw_response for t in upto)[-3:]

    assert len(turns) > 2 * TurnFold.KEEP
    for n in range(1, len(turns) + 1):
        assert value(turns[:n]) == folded(turns[:n])
    assert made == list(range(1, len(turns) + 1))
    assert len(fold._last[4]) == TurnFold.KEEP
    made.clear()
    n = len(turns)
    assert value(turns, count=n - 2) == folded(turns[:n - 2]) and made == []
    assert value(turns[:n - 1]) == folded(turns[:n - 1]) and made == []
    assert value(turns[:3]) == folded(turns[:3]) and made == [1, 2, 3]
    made.clear()
    assert value(turns[:3], key="other") == folded(turns[:3]) and made == [1, 2, 3]
    made.clear()
    changed = (*turns[:2], replace(turns[2], raw_response="changed"), *turns[3:5])
    assert value(changed, key="other") == folded(changed) and made == [3, 4, 5]
    with pytest.raises(ValueError, match="at least one turn"):
        value(turns[:0])


@pytest.mark.parametrize("spec", SPECS)
def test_one_strategy_switching_between_runs_and_turns_gives_fresh_prompts(spec) -> None:
    """One strategy object rendering two runs in turn, and a run whose middle turn is
    replaced (same tools and data: the same run cache), gives the fresh prompts: the
    previous prompt's pieces are reused only for the same turn objects of the same run."""
    from dataclasses import replace

    lisp, transcript = _lisp(), _transcript()
    strategy = get_strategy(spec)
    for n in range(1, 12):
        for trace in (lisp, transcript):
            assert _prompt(trace, strategy, n) == _prompt(trace, get_strategy(spec), n,
                                                          fresh=True), f"{spec}, prompt {n}"
    args = lisp.prompt_arguments(len(lisp.turns) + 1)
    turns = args["turns"]
    changed = list(turns)
    changed[-2] = replace(turns[-2], raw_response=turns[-2].raw_response + "\n;; changed",
                          prints=(*turns[-2].prints, "changed output"))
    memory = turns[-1].memory

    def prompt(upto: Any, tools: Any, data: Any) -> str:
        ctx = RenderContext(mission=args["mission"], system_prompt=args["system_prompt"],
                            tools=tools, data=data, turns_left=args["turns_left"])
        return json.dumps([strategy.to_messages(upto, memory, ctx),
                           strategy.cache_breakpoints(upto, memory, ctx)])

    prompt(tuple(turns), args["tools"], args["data"])
    again = prompt(tuple(changed), args["tools"], args["data"])
    assert again == prompt(tuple(changed), dict(args["tools"]), dict(args["data"]))
    if "clear_tool_inputs" not in spec:  # else that turn's program and output are cleared
        assert again != prompt(tuple(turns), args["tools"], args["data"])
