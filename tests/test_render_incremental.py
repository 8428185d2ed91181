"""What the strategies keep from one prompt to the next of a run gives the texts a
prompt rendered on its own gives (issue 20 item 4: rendering time in compare).

- the windows of a coalesced transcript view (the last tool calls, the last outputs)
  are kept per turn and moved on by one turn per prompt (``_imported_messages._window``);
- ``clear-tool-uses`` under ``chars4`` adds up the lengths of its turns' texts instead
  of joining and counting them.
"""

from __future__ import annotations

import json
import random
from types import SimpleNamespace

import pytest

from turnpress import ToolCall, Turn, get_strategy
from turnpress.core.compression import RenderContext, newest_items
from turnpress.core.trace import Trace
from turnpress.plugins import _imported_messages as im
from turnpress.plugins import clear_tool_uses, full_history

SYSTEM = {"role": "system", "content": "You are an agent."}
MISSION = {"role": "user", "content": "Fix the bug."}


def _turn(number: int, rng: random.Random) -> Turn:
    """A transcript turn: observations as user messages (mini-swe-agent) in the first
    turns, then tool calls answered by tool messages, now and then the user's words."""
    lines = "\n".join(f"out {number}.{i}" for i in range(rng.choice([0, 1, 3, 60])))
    if number <= 4:
        messages = [{"role": "assistant", "content": f"step {number}"},
                    {"role": "user", "content": lines}]
        return Turn.succeeded(number, "", None, memory={}, messages=messages,
                              raw_response=f"step {number}")
    calls = [(f"c{number}.{k}", f"cmd {number} {k} " + "x" * rng.choice([1, 400]))
             for k in range(rng.choice([0, 1, 2]))]
    messages = [{"role": "assistant", "content": None if calls else f"think {number}",
                 "tool_calls": [{"id": i, "type": "function", "function": {
                     "name": "bash", "arguments": json.dumps({"command": c})}}
                     for i, c in calls]}]
    messages += [{"role": "tool", "tool_call_id": i, "content": lines} for i, _ in calls]
    if rng.random() < 0.3:
        messages.append({"role": "user", "content": f"please also check {number}"})
    return Turn.succeeded(number, "", None, memory={}, messages=messages,
                          tool_calls=[ToolCall("bash", ({"command": c},), lines)
                                      for _, c in calls], raw_response="")


def _trace(seed: int, n: int = 30) -> Trace:
    rng = random.Random(seed)
    return Trace(mission="Fix the bug.", turns=[_turn(k, rng) for k in range(1, n + 1)],
                 preamble=(SYSTEM, MISSION), max_turns=100, name=f"t{seed}")


def _context(trace: Trace, n: int) -> tuple[tuple[Turn, ...], RenderContext]:
    args = trace.prompt_arguments(n)
    return args["turns"], RenderContext(
        mission=args["mission"], system_prompt=args["system_prompt"], tools=args["tools"],
        data=args["data"], turns_left=args["turns_left"], preamble=args["preamble"])


def _first_tool_turn_anew(turns) -> int:
    return next((pos for pos, t in enumerate(turns, 1) if im.calls_tools(t)), len(turns) + 1)


def _tool_calls_anew(turns, ctx: RenderContext, limit: int) -> str | None:
    """The section as made from every turn, newest first (the walk it replaces)."""
    if not turns:
        return None
    calls = newest_items((im._call_entries(t, ctx) for t in reversed(turns)), limit)
    return ctx.template("history/tool_calls.j2", calls=calls)


def _last_outputs_anew(turns, ctx: RenderContext, limit: int, max_chars: int | None,
                       lines: int) -> str | None:
    if max_chars is not None:
        limits = {"head_lines": 3, "tail_lines": 3, "head_chars": max_chars // 2,
                  "tail_chars": max_chars // 2}
    else:
        limits = im.line_limits(lines)
    first = _first_tool_turn_anew(turns)
    cuts = newest_items((im._cut_contents(t, ctx, limits, pos >= first)
                         for pos, t in zip(range(len(turns), 0, -1), reversed(turns),
                                           strict=True)), limit)
    prints = [c for c in cuts if c is not None]
    return ctx.template("history/output.j2", prints=prints, max_chars=None) if prints else None


@pytest.mark.parametrize("order", ["in turn", "shuffled", "backwards"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_windows_of_a_coalesced_view_are_those_made_anew(order: str, seed: int) -> None:
    trace = _trace(seed)
    prompts = list(range(1, len(trace.turns) + 2))
    if order == "shuffled":
        random.Random(seed).shuffle(prompts)
    elif order == "backwards":
        prompts.reverse()
    for n in prompts:
        turns, ctx = _context(trace, n)
        for limit in (0, 1, 3, 20):
            assert im.tool_calls(turns, ctx, limit) == _tool_calls_anew(turns, ctx, limit)
            for max_chars, lines in ((None, 20), (None, 2), (200, 20)):
                assert im.last_outputs(turns, ctx, limit, max_chars=max_chars,
                                       lines=lines) == _last_outputs_anew(
                    turns, ctx, limit, max_chars, lines), (n, limit, max_chars, lines)


def test_a_view_of_another_run_between_two_prompts_is_its_own() -> None:
    one, other = _trace(4), _trace(5)
    for n in range(1, len(one.turns) + 2):
        for trace in (one, other):
            turns, ctx = _context(trace, n)
            assert im.tool_calls(turns, ctx, 5) == _tool_calls_anew(turns, ctx, 5)
            assert im.last_outputs(turns, ctx, 4) == _last_outputs_anew(turns, ctx, 4, None, 20)


@pytest.mark.parametrize("name", ["single-user-coalesced", "aggressive"])
def test_coalesced_prompts_of_a_run_are_its_prompts_rendered_alone(name: str) -> None:
    trace = _trace(6, 40)
    in_order = [trace.prompt(n, name) for n in range(1, len(trace.turns) + 2)]
    alone = [_trace(6, 40).prompt(n, name) for n in range(len(trace.turns) + 1, 0, -1)]
    assert in_order == alone[::-1]


@pytest.mark.parametrize("seed", [7, 8])
def test_clear_tool_uses_counts_characters_as_the_joined_text(seed: int) -> None:
    """Under chars4 the count is len // 4 of the joined texts; it is what joining and
    counting gives on every prompt, so clearing starts at the same prompt."""
    trace = _trace(seed, 40)
    strategy = get_strategy("clear-tool-uses")
    for n in range(1, len(trace.turns) + 2):
        turns, ctx = _context(trace, n)
        full = strategy._full.to_messages(turns, {}, ctx)
        assert strategy._full_count(turns, ctx, full) == strategy.count(ctx, full)


def test_clear_tool_uses_under_chars4_joins_nothing(monkeypatch) -> None:
    """The cheap proof that a run is below the trigger: under chars4 no text is joined
    and counted (the tokenizer is never called); another tokenizer counts the text."""
    calls: list[int] = []

    def spy(text: str) -> int:
        calls.append(len(text))
        return len(text) // 4

    trace = _trace(9, 20)
    strategy = get_strategy("clear-tool-uses")
    turns, ctx = _context(trace, len(trace.turns) + 1)
    full = strategy._full.to_messages(turns, {}, ctx)
    expected = strategy.count(ctx, full)
    monkeypatch.setattr(ctx.registry, "tokenizers",
                        lambda: {"chars4": SimpleNamespace(value=spy)})
    monkeypatch.setattr(clear_tool_uses, "chars4", spy)
    assert strategy._full_count(turns, ctx, full) == expected
    assert calls == []
    monkeypatch.setattr(clear_tool_uses, "chars4", lambda text: 0)  # not the one registered
    assert strategy._full_count(turns, ctx, full) == expected
    assert len(calls) == 1


def test_the_walks_of_one_prompt_compare_its_turns_once(monkeypatch) -> None:
    """Every strategy's walk of prompt n+1 compares the same two tuples of turns (prompt
    n's and prompt n+1's): they are compared once, not once per walk."""
    compared: list[int] = []

    def is_(a: object, b: object) -> bool:
        compared.append(1)
        return a is b

    monkeypatch.setattr(full_history, "is_", is_)
    trace = _trace(10, 12)
    walks = [full_history.TurnWalk() for _ in range(5)]
    made: list[list[int]] = []
    for n in (11, 12):
        turns, ctx = _context(trace, n)
        compared.clear()
        made = [list(w.pieces(ctx, turns, "k", lambda pos, _: pos)) for w in walks]
    assert made == [list(range(1, 12))] * 5
    assert len(compared) == 10  # prompt 12's turns against prompt 11's, once


def test_a_list_of_turns_changed_in_place_is_walked_again() -> None:
    trace = _trace(11, 6)
    turns, ctx = _context(trace, 7)
    as_list = list(turns)
    walk: full_history.TurnWalk[int] = full_history.TurnWalk()
    assert walk.pieces(ctx, as_list, "k", lambda pos, _: id(as_list[pos - 1])) == tuple(
        id(t) for t in turns)
    as_list[2] = _trace(12, 6).turns[2]
    assert walk.pieces(ctx, as_list, "k", lambda pos, _: id(as_list[pos - 1])) == tuple(
        id(t) for t in as_list)


@pytest.mark.parametrize("seed", [13, 14])
def test_the_first_tool_turn_of_a_prompt_is_the_one_found_anew(seed: int) -> None:
    """first_tool_turn remembers the last tuples of turns and looks only at the new turns
    of a tuple that starts with one of them; words_at follows from it."""
    one, other = _trace(seed, 12), _trace(seed + 100, 12)
    rng = random.Random(seed)
    prompts = [(t, n) for t in (one, other) for n in range(1, 14)]
    for trace, n in [*prompts, *rng.sample(prompts, len(prompts))]:
        turns = trace.prompt_arguments(n)["turns"]
        expected = _first_tool_turn_anew(turns)
        assert im.first_tool_turn(turns) == expected
        assert im.first_tool_turn(list(turns)) == expected
        for pos in range(1, len(turns) + 1):
            assert im.words_at(turns, pos) == im.words_at(list(turns), pos) == (
                expected <= pos)
    # a tuple that starts with a remembered one but differs later is looked at anew
    early = one.prompt_arguments(4)["turns"]  # 3 turns, none calls a tool
    assert im.first_tool_turn(early) == 4
    mixed = (*early, *other.turns[3:])
    assert im.first_tool_turn(mixed) == _first_tool_turn_anew(mixed)
