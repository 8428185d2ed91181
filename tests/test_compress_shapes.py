"""Compressor.messages() keeps the provider shapes of the last prompt (issue 18, speed).

DESIGN §2 (Compressor: ``messages()`` equals ``compress()`` of every message added) and
§10. The kept shapes must never show: every format equals ``compress()`` after every
add, the caller's copies are its own (changing one changes no other call), and a
strategy that changes a message it gave before is seen. Also the one render path
(``render_with_calls``, ``prepare``) and the checks the fast paths must still make.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_compress import TRANSCRIPT, as_anthropic, transcripts
from test_readers_openai_responses import item_lists

from turnpress import Compressor, Strategy, compress, hookimpl
from turnpress.core.compression import (
    RenderOptions,
    check_messages,
    model_calls,
    prepare,
    render,
    render_with_calls,
    strategy_names,
)
from turnpress.core.model import Turn
from turnpress.core.registry import get_registry
from turnpress.core.responses import to_responses
from turnpress.plugins.readers.openai_responses import entries

PROPERTY = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _feed(format: str, messages: list[dict[str, Any]]) -> tuple[Any, list[Any], Any]:
    """``(compressor, what to add, what compress() of the first k of them takes)``."""
    if format == "anthropic":
        system, body = as_anthropic(messages)
        return (Compressor("full-history", format="anthropic", system=system), body,
                lambda k: (system, body[:k]))
    if format == "responses":
        _, items = to_responses(messages)
        return Compressor("full-history", format="responses"), items, lambda k: items[:k]
    return Compressor("full-history"), messages, lambda k: messages[:k]


def _mutate(value: Any) -> None:
    """Change every dict and list inside ``value`` in place."""
    if isinstance(value, tuple):
        for part in value:
            _mutate(part)
    elif isinstance(value, dict):
        for item in list(value.values()):
            _mutate(item)
        value["role"] = "MUTATED"
        value["extra"] = ["MUTATED"]
    elif isinstance(value, list):
        for item in value:
            _mutate(item)
        value.append({"MUTATED": True})


# -- equal to compress() in every format, after every add --------------------------------------


@PROPERTY
@given(transcripts(), st.sampled_from(strategy_names()),
       st.sampled_from(["anthropic", "responses"]))
def test_compressor_equals_compress_in_every_format(messages: list[dict[str, Any]], name: str,
                                                    format: str) -> None:
    """The kept shapes (Anthropic breakpoints moving from call to call, merged tool
    results, Responses items) give what compress() of the list so far gives, or the
    same error."""
    try:
        _, added, given_to_compress = _feed(format, messages)
    except ValueError:  # arguments that are no JSON object have no Anthropic shape
        assume(False)
    compressor = Compressor(name, format=format,
                            system=given_to_compress(0)[0] if format == "anthropic" else None)
    for k, message in enumerate(added, 1):
        compressor.add(message)
        expected = _outcome(lambda k=k: compress(given_to_compress(k), strategy=name,
                                                 format=format))
        assert _outcome(compressor.messages) == expected, (name, k)
        assert _outcome(compressor.messages) == expected, (name, k)  # the kept shapes


def _outcome(call: Any) -> Any:
    try:
        return call()
    except ValueError as exc:
        return f"{type(exc).__name__}: {exc}"


@PROPERTY
@given(item_lists(), st.sampled_from(["full-history", "price-scheduled", "rolling-window",
                                      "observation-masking"]))
def test_responses_compressor_with_reasoning_and_compaction_items(items: list[dict[str, Any]],
                                                                   name: str) -> None:
    """Opaque items (reasoning before its output, compaction after the history it
    compacts) are read once and put back as compress() puts them back."""
    compressor = Compressor(name, format="responses")
    for k, item in enumerate(items, 1):
        compressor.add(item)
        assert compressor.messages() == compress(items[:k], strategy=name,
                                                 format="responses"), k


def test_responses_add_checks_each_item_as_a_full_read_would() -> None:
    """add() reads from the last place a chat message starts afresh; its error is the
    one reading every item gives, with the item's index."""
    _, items = to_responses(TRANSCRIPT)
    bad = {"type": "function_call_output", "output": "x"}  # no call_id
    with pytest.raises(ValueError) as full:
        entries([*items, bad], "messages")
    compressor = Compressor(format="responses")
    compressor.extend(items)
    with pytest.raises(ValueError) as incremental:
        compressor.add(bad)
    assert str(incremental.value) == str(full.value)
    assert f"item {len(items)}" in str(full.value)
    assert len(compressor) == len(items)
    assert compressor.messages() == compress(items, format="responses")


def test_responses_error_in_the_items_reads_as_compress_says_it() -> None:
    """A call answered twice is found when the messages are asked for, as compress()
    finds it; the compressor stays usable for the items before."""
    _, items = to_responses(TRANSCRIPT[:5])
    again = {"type": "function_call_output", "call_id": "call_1", "output": "again"}
    with pytest.raises(ValueError) as direct:
        compress([*items, again], format="responses")
    compressor = Compressor(format="responses")
    compressor.extend([*items, again])
    for _ in range(2):  # the same error each time, nothing kept from the failed read
        with pytest.raises(ValueError) as incremental:
            compressor.messages()
        assert str(incremental.value) == str(direct.value)
    assert compressor.turns == ()


# -- the caller's copies are its own ---------------------------------------------------------


@pytest.mark.parametrize("format", ["openai", "anthropic", "responses"])
@pytest.mark.parametrize("name", ["price-scheduled", "full-history", "rolling-window"])
def test_changing_what_messages_gave_changes_no_other_call(format: str, name: str) -> None:
    """Every dict and list handed out is new: changing a result (cache_control on the
    last block, an edited tool call) after a call changes neither the next call, nor
    a result handed out before."""
    _, added, given_to_compress = _feed(format, TRANSCRIPT)
    compressor = Compressor(name, format=format,
                            system=given_to_compress(0)[0] if format == "anthropic" else None)
    compressor.extend(added)
    expected = compress(given_to_compress(len(added)), strategy=name, format=format)
    first = compressor.messages()
    second = compressor.messages()
    assert first == second == expected
    _mutate(first)
    assert second == expected  # handed out before the change: not shared with the first
    third = compressor.messages()
    assert third == expected
    _mutate(third)
    assert compressor.messages() == expected


# -- a strategy that changes a message it gave before --------------------------------------


class _Rewriting(Strategy):
    """Keeps one dict per turn and rewrites its content in place on every prompt
    (against the contract, but the output must still be this prompt's)."""

    name = "rewriting-in-place"

    def __init__(self) -> None:
        self.kept: dict[int, dict[str, Any]] = {}
        self.head = {"role": "system", "content": "head"}

    def to_messages(self, turns, memory, ctx):
        out = [self.head, {"role": "user", "content": ctx.mission}]
        for t in turns:
            kept = self.kept.setdefault(t.number, {"role": "assistant"})
            kept["content"] = f"turn {t.number} of {len(turns)}"
            out.append(kept)
        return out


@pytest.fixture
def rewriting(fresh_registry):
    class Plugin:
        @hookimpl
        def register_strategies(self, register):
            register(_Rewriting)

    get_registry().register(Plugin(), "rewriting-plugin")
    return _Rewriting()


@pytest.mark.parametrize("format", ["openai", "anthropic", "responses"])
def test_a_message_rewritten_in_place_is_shaped_again(rewriting: Strategy, format: str) -> None:
    _, added, given_to_compress = _feed(format, TRANSCRIPT)
    compressor = Compressor(rewriting, format=format,
                            system=given_to_compress(0)[0] if format == "anthropic" else None)
    for k, message in enumerate(added, 1):
        compressor.add(message)
        out = compressor.messages()
        assert out == compress(given_to_compress(k), strategy=_Rewriting(), format=format), k
    text = json.dumps(out)
    turns = text.count("turn 1 of ")
    assert turns == 1 and "turn 1 of 3" in text  # the newest content, not a kept one


# -- the one render path -------------------------------------------------------------------


class _Counting(Strategy):
    """Records the context of each call, and says it made one model call per turn."""

    name = "counting-calls"
    seen: ClassVar[list[Any]] = []

    def to_messages(self, turns, memory, ctx):
        type(self).seen.append(("to_messages", ctx))
        return [{"role": "user", "content": f"{ctx.mission}: {len(turns)} turns"}]

    def model_calls(self, turns, memory, ctx):
        type(self).seen.append(("model_calls", ctx))
        return [type("Call", (), {"input_tokens": 10 * len(turns), "output_tokens": 1})()]


def _turns(count: int) -> tuple[Turn, ...]:
    return tuple(Turn.succeeded(n, f"(+ {n} 1)", n + 1, memory={}) for n in range(1, count + 1))


def test_render_with_calls_prepares_once_and_equals_render_and_model_calls() -> None:
    _Counting.seen = []
    strategy = _Counting()
    arguments = {"mission": "count", "turns_left": 3, "compression": strategy}
    messages, calls = render_with_calls(_turns(2), **arguments)
    assert [kind for kind, _ in _Counting.seen] == ["to_messages", "model_calls"]
    assert _Counting.seen[0][1] is _Counting.seen[1][1]  # one context for both
    assert messages == render(_turns(2), **arguments)
    assert [c.input_tokens for c in calls] == [c.input_tokens for c in model_calls(
        _turns(2), **arguments)] == [20]


def test_the_agent_loop_prepares_each_prompt_once() -> None:
    """The loop's prompt and the model calls that built it come from one context."""
    from turnpress.agent.loop import run_loop

    _Counting.seen = []
    replies = iter(["```clojure\n(+ 1 1)\n```", "```clojure\n(return 3)\n```"])
    step = run_loop(mission="m", llm=lambda messages: next(replies), tools={}, data={},
                    max_turns=3, compression=_Counting(), system_prompt="s")
    assert step.success and len(step.turns) == 2
    kinds = [kind for kind, _ in _Counting.seen]
    assert kinds == ["to_messages", "model_calls"] * 2
    for k in (0, 2):
        assert _Counting.seen[k][1] is _Counting.seen[k + 1][1]
    assert [u["summary_input_tokens"] for u in step.turn_usage] == [0, 10]


def test_prepare_checks_a_bad_turns_tuple_every_time() -> None:
    """The same turns tuple is not checked twice, but only once it passed."""
    bad = (*_turns(1), "not a turn")
    for _ in range(2):
        with pytest.raises(TypeError, match=r"turns\[1\] is a str, not a Turn"):
            prepare(bad, None, RenderOptions(mission="m"))
    good = _turns(2)
    assert prepare(good, None, RenderOptions(mission="m")).turns is good


@pytest.mark.parametrize(("messages", "index"), [
    ([{"role": "user", "content": "a"}, {"role": ["user"], "content": "b"}], 1),
    ([{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}], 1),
    ([{"role": "user", "content": 3}], 0),
    ([{"role": "assistant", "content": None}], 0),
    ([{"role": "user"}], 0),
    ([{"role": "user", "content": "a"}, ("user", "b")], 1),
])
def test_check_messages_still_names_the_first_bad_message(messages: list[Any],
                                                          index: int) -> None:
    strategy = type("S", (), {"name": "s"})()
    with pytest.raises(TypeError, match=rf"bad message at index {index}:"):
        check_messages(messages, strategy)


def test_check_messages_accepts_what_it_accepted() -> None:
    strategy = type("S", (), {"name": "s"})()
    fine = [{"role": "system", "content": "s"},
            {"role": "user", "content": [{"type": "text", "text": "t"}]},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]},
            {"role": "tool", "content": "x", "tool_call_id": "c"}]
    assert check_messages(fine, strategy) is fine


# -- a live loop's prompts share their prefix states -------------------------------------------


def _run(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "agent"},
                                      {"role": "user", "content": "fix it"}]
    for n in range(1, turns + 1):
        messages.append({"role": "assistant", "content": f"step {n}", "tool_calls": [
            {"id": f"c{n}", "type": "function",
             "function": {"name": "run", "arguments": json.dumps({"n": n})}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}",
                         "content": f"src/file_{n}.py line {100 + n}: value_{n}"})
    return messages


@pytest.mark.parametrize("name", ["price-scheduled", "checkpoint-coalesced"])
def test_a_new_turn_is_the_only_one_stepped_again(name: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Without turns_left (no turns-left line shows the run's budget) the prefix states
    of one prompt serve the next: adding a turn steps the turns that changed, not the
    whole run (it did, once per add, when the budget was in the key)."""
    from turnpress.plugins.checkpoint_coalesced import CheckpointCoalesced

    steps: list[int] = []
    kind = type(Compressor(name).strategy)
    original = kind._step

    def counting(self, before, turns, pos, ctx):
        steps.append(pos)
        return original(self, before, turns, pos, ctx)

    assert issubclass(kind, CheckpointCoalesced)
    monkeypatch.setattr(kind, "_step", counting)
    messages = _run(31)
    compressor = Compressor(name)
    compressor.extend(messages[:-2])
    compressor.messages()
    steps.clear()
    compressor.extend(messages[-2:])  # turn 31 (turn 30, closed now, is the same object)
    out = compressor.messages()
    assert steps == [31]
    assert out == compress(messages, strategy=name)


def test_turn_walk_walks_again_from_the_first_turn_that_differs() -> None:
    from turnpress.core.compression import prepare
    from turnpress.plugins.full_history import TurnWalk

    ctx = prepare((), None, RenderOptions(mission="m")).ctx
    walk: TurnWalk[int] = TurnWalk()
    made: list[int] = []

    def make(pos: int, before: list[int]) -> int:
        made.append(pos)
        return pos + (before[-1] if before else 0)

    turns = _turns(5)
    assert walk.pieces(ctx, turns, "k", make) == (1, 3, 6, 10, 15)
    changed = (*turns[:3], *_turns(5)[3:])  # turns 4 and 5 are new objects
    made.clear()
    assert walk.pieces(ctx, changed, "k", make) == (1, 3, 6, 10, 15)
    assert made == [4, 5]
    made.clear()
    assert walk.pieces(ctx, changed, "k", make) == (1, 3, 6, 10, 15)
    assert walk.pieces(ctx, changed, "k", make, count=2) == (1, 3)
    assert made == []
    assert walk.pieces(ctx, changed, "other key", make) == (1, 3, 6, 10, 15)
    assert made == [1, 2, 3, 4, 5]


def test_a_value_that_cannot_be_compared_is_shaped_again() -> None:
    """A logger's extra field that refuses ``==`` (an array...) does not break the kept
    shapes: the message is shaped again, as compress() shapes it."""

    class Ambiguous:
        def __eq__(self, other: object) -> bool:
            raise ValueError("the truth value is ambiguous")

        __hash__ = object.__hash__

    messages = [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": "x", "extra": Ambiguous()},
                {"role": "user", "content": "more"}]
    compressor = Compressor("full-history")
    compressor.extend(messages)
    expected = compress(messages, strategy="full-history")
    assert compressor.messages() == compressor.messages() == expected
