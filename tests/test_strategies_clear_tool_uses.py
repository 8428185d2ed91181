"""Behaviour of ``clear-tool-uses``: Anthropic's ``clear_tool_uses_20250919`` context
edit, offline (issue 11 item 3). Transcript cases are in test_strategies_transcripts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from turn_strategies import History, histories, size

from turnpress import ToolCall, Turn, get_strategy, normalize, render
from turnpress.plugins.clear_tool_uses import ClearToolUses

NAME = "clear-tool-uses"


def _turn(n: int, tool: str = "search", out: str = "result line\n" * 20) -> Turn:
    return Turn.succeeded(n, f"(tool/{tool} {n})", None, memory={}, prints=[out],
                          tool_calls=[ToolCall(tool, (n,))],
                          raw_response=f"```clojure\n(tool/{tool} {n})\n```")


def _render(turns, spec: str) -> list[dict]:
    return render(turns, mission="m", system_prompt="sys", turns_left=3, compression=spec)


def test_defaults_are_anthropics() -> None:
    assert ClearToolUses.option_defaults() == {
        "trigger": 100_000, "keep": 3, "clear_at_least": 0, "exclude_tools": "",
        "clear_tool_inputs": False, "tokenizer": "chars4"}
    assert normalize(f"{NAME}:trigger=500,clear_tool_inputs=true") == (
        NAME, {"trigger": 500, "clear_tool_inputs": True})


@pytest.mark.parametrize(("options", "message"), [
    ({"tokenizer": "nope"}, "'tokenizer' must name a registered tokenizer"),
    ({"exclude_tools": 3}, "'exclude_tools' must be tool names"),
    ({"keep": -1}, "'keep' must be an integer >= 0"),
    ({"clear_tool_inputs": "yes"}, "'clear_tool_inputs' must be one of"),
])
def test_bad_options(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        get_strategy((NAME, options))


def test_below_the_trigger_it_is_full_history() -> None:
    turns = [_turn(n) for n in range(1, 6)]
    assert _render(turns, NAME) == _render(turns, "full-history")


def test_past_the_trigger_all_but_the_last_keep_results_are_cleared() -> None:
    """A PTC-Lisp turn is one tool use: its program the input, its feedback the result."""
    turns = [_turn(n) for n in range(1, 6)]
    messages = _render(turns, f"{NAME}:trigger=10,keep=2")
    full = _render(turns, "full-history")
    feedback = [m["content"] for m in messages[3::2]]
    assert feedback[:3] == ["[cleared]"] * 3
    assert feedback[3:] == [m["content"] for m in full[9::2]]
    assert [m["content"] for m in messages[2::2]] == [m["content"] for m in full[2::2]]
    inputs = _render(turns, f"{NAME}:trigger=10,keep=2,clear_tool_inputs=true")
    assert [m["content"] for m in inputs[2::2]][:3] == ["[cleared]"] * 3


def test_exclude_tools_and_clear_at_least() -> None:
    turns = [_turn(1, "get-config"), _turn(2), _turn(3), _turn(4)]
    messages = _render(turns, f"{NAME}:trigger=10,keep=1,exclude_tools=get-config|lookup")
    assert messages[3]["content"] != "[cleared]" and messages[5]["content"] == "[cleared]"
    with_list = render(turns, mission="m", system_prompt="sys", turns_left=3,
                       compression=ClearToolUses(trigger=10, keep=1,
                                                 exclude_tools=["get-config"]))
    assert with_list == messages
    # clearing 3 results of ~60 tokens each frees < 1000 tokens: not worth breaking the cache
    assert _render(turns, f"{NAME}:trigger=10,keep=1,clear_at_least=1000") == _render(
        turns, "full-history")


# -- properties ------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(histories(min_turns=1), st.integers(0, 400), st.integers(0, 3), st.booleans())
def test_never_larger_and_cleared_stays_cleared(history: History, trigger: int, keep: int,
                                                inputs: bool) -> None:
    """Never larger than full history; the same messages and roles; a result cleared for
    turn n stays cleared for every later turn (the history only grows)."""
    strategy = ClearToolUses(trigger=trigger, keep=keep, clear_tool_inputs=inputs)
    previous: set[int] = set()
    for n in range(1, len(history.turns) + 2):
        messages, full = history.prompt(n, strategy), history.prompt(n, "full-history")
        assert size(messages) <= size(full)
        assert [m["role"] for m in messages] == [m["role"] for m in full]
        cleared = {i for i, m in enumerate(messages)
                   if m["content"] == "[cleared]" != full[i]["content"]}
        assert previous <= cleared
        previous = {i for i in cleared if i % 2 == 1}  # results (inputs may be kept short)
