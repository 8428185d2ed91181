"""Speed work of issue 9 item 9 that must not change a prompt: one checkpoint-coalesced
instance reusing its last prompt's walk, the text cache giving up on templates whose
texts never come back, and check_messages' fast path for plain messages."""

from __future__ import annotations

import copy

import pytest
from test_strategies_coalesced_memo import RUNS

from turnpress.core import render_context
from turnpress.core.compression import RenderContext, check_messages, get_strategy
from turnpress.core.trace import Trace
from turnpress.plugins.checkpoint_coalesced import CheckpointCoalesced

CHECKPOINT_SPECS = ["checkpoint-coalesced", "checkpoint-coalesced:every=3,delta_chars=300",
                    "checkpoint-coalesced:every=4,turn_lines=0,output_lines=2,key_lines=1"]


def _context(trace: Trace, n: int, turns_left: int | None = None) -> RenderContext:
    args = trace.prompt_arguments(n)
    return RenderContext(mission=args["mission"], system_prompt=args["system_prompt"],
                         tools=args["tools"], data=args["data"],
                         turns_left=args["turns_left"] if turns_left is None else turns_left,
                         preamble=args["preamble"])


def _prompt(strategy, trace: Trace, turns: tuple, turns_left: int) -> tuple[list, list]:
    ctx = _context(trace, 1, turns_left)
    memory = turns[-1].memory if turns else {}
    return (strategy.to_messages(turns, memory, ctx),
            strategy.cache_breakpoints(turns, memory, ctx))


@pytest.mark.parametrize("run", sorted(RUNS))
@pytest.mark.parametrize("spec", CHECKPOINT_SPECS)
def test_one_instance_gives_fresh_prompts_in_any_order(run: str, spec: str) -> None:
    """compare keeps one strategy instance for a run: prompt n+1 extends prompt n's
    walk, a shorter prefix cuts it, other turns start afresh; every prompt equals a
    fresh instance's on a copy of the run."""
    trace = RUNS[run]()
    twin = copy.deepcopy(trace)
    turns, twin_turns = tuple(trace.turns), tuple(twin.turns)
    budget = trace.max_turns
    cases = [turns[:k] for k in range(len(turns) + 1)]
    cases += [*cases[::-1], turns[:3], (*turns[:2], *turns[5:]), turns[4:], turns[:7], turns]

    def twin_of(part: tuple) -> tuple:
        return tuple(twin_turns[turns.index(t)] for t in part)

    strategy = get_strategy(spec)
    for part in cases:
        left = budget - len(part)
        expected = _prompt(get_strategy(spec), twin, twin_of(part), left)
        assert _prompt(strategy, trace, part, left) == expected, (spec, len(part))


def test_the_next_prompt_walks_only_its_new_turn(monkeypatch) -> None:
    """Prompt n+1 after prompt n (same instance, same run) asks the memo for its new
    turn only, not for every turn again."""
    asked: list[int] = []
    per_turn = RenderContext.per_turn

    def counting(self, turn, key, make):
        if isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], tuple) \
                and key[0][:1] == (CheckpointCoalesced,):
            asked.append(turn.number)
        return per_turn(self, turn, key, make)

    monkeypatch.setattr(RenderContext, "per_turn", counting)
    trace = RUNS["ptc"]()
    strategy = get_strategy("checkpoint-coalesced:every=4")
    turns = tuple(trace.turns)
    for k in range(len(turns) + 1):
        _prompt(strategy, trace, turns[:k], trace.max_turns - k)
    assert asked == [t.number for t in turns]
    asked.clear()
    for k in range(len(turns), -1, -1):  # backwards: the last walk is cut
        _prompt(strategy, trace, turns[:k], trace.max_turns - k)
    assert asked == []


def test_a_template_whose_texts_never_come_back_stops_being_remembered(monkeypatch) -> None:
    """A shifting window (new variables on every call) is rendered without the text
    cache after a while; a template asked for the same texts keeps them. The texts are
    the same either way (both templates through Jinja, without their Python twins)."""
    monkeypatch.setattr(render_context, "_TEXT_STATS", {})
    monkeypatch.setattr(render_context, "TWIN_NAMES", frozenset())
    ctx = RenderContext(mission="m", system_prompt="", tools={}, data={"w": 1},
                        turns_left=3)
    cache = ctx.run_cache
    for i in range(3 * render_context._TEXT_PROBE):
        prints = [f"line {j}" for j in range(i, i + 5)]
        assert ctx.template("history/output.j2", prints=prints, max_chars=None) == \
            ";; Output:\n" + "\n".join(prints)
        assert ctx.turns_left_line(i % 3 + 2) == f"Turns left: {i % 3 + 2}"
    output_keys = [k for k in cache.texts if k[0] == "history/output.j2"]
    assert len(output_keys) == render_context._TEXT_PROBE
    assert render_context._TEXT_STATS["history/output.j2"][2] > 0  # paused
    assert render_context._TEXT_STATS["history/turns_left.j2"][2] == 0
    assert len([k for k in cache.texts if k[0] == "history/turns_left.j2"]) == 3


@pytest.mark.parametrize("message", [
    {"role": ["user"], "content": "x"},
    {"role": "robot", "content": "x"},
    {"role": "user", "content": 3},
    {"role": "user"},
    {"role": "assistant", "content": None},
    ("user", "x"),
])
def test_check_messages_names_the_bad_message(message) -> None:
    good = {"role": "user", "content": "fine"}
    strategy = get_strategy("full-history")
    with pytest.raises(TypeError, match="bad message at index 1"):
        check_messages([good, message, good], strategy)


def test_check_messages_takes_transcript_messages() -> None:
    messages = [{"role": "system", "content": "s"},
                {"role": "assistant", "content": None,
                 "tool_calls": [{"id": "c1", "type": "function",
                                 "function": {"name": "bash", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text",
                                                                      "text": "ok"}]}]
    assert check_messages(messages, get_strategy("full-history")) is messages


@pytest.mark.parametrize("run", sorted(RUNS))
def test_checkpoint_views_cut_each_turns_output_once(run: str, monkeypatch) -> None:
    """Every checkpoint's view shows all earlier turns' outputs: a turn's key lines (for
    its age tier) are found once per run, not again at each later checkpoint."""
    from turnpress.plugins import checkpoint_coalesced

    made: list[tuple] = []
    key_lines = checkpoint_coalesced.key_lines

    def counting(text, ctx, *, lines, keys, line_chars, seen=frozenset()):
        made.append((text, lines, keys, line_chars, frozenset(seen)))
        return key_lines(text, ctx, lines=lines, keys=keys, line_chars=line_chars, seen=seen)

    monkeypatch.setattr(checkpoint_coalesced, "key_lines", counting)
    trace = RUNS[run]()
    strategy = get_strategy("checkpoint-coalesced:every=3,delta_chars=0")
    turns = tuple(trace.turns)
    for k in range(len(turns) + 1):
        _prompt(strategy, trace, turns[:k], trace.max_turns - k)
    assert made
    assert len(made) == len(set(made))
