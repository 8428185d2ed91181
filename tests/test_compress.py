"""turnpress.compress() and Compressor: any agent's message list through a strategy (issue 10).

DESIGN §2 (compress / Compressor) and §10 (the transcript mapping they read with).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnpress import Compressor, Strategy, StrategyNotApplicable, compress
from turnpress.compress import count_tokens
from turnpress.core.compression import strategy_names

# -- a small transcript: parallel tool calls, an error, a user message at the end -------------


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}


TRANSCRIPT: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a coding agent. Use the tools."},
    {"role": "user", "content": "Fix the failing test in calc.py."},
    {"role": "assistant", "content": None, "tool_calls": [
        call("call_1", "read_file", path="calc.py"),
        call("call_2", "run", command="pytest -q")]},
    {"role": "tool", "tool_call_id": "call_1",
     "content": "def add(a, b):\n    return a - b\n" + "# padding line\n" * 30},
    {"role": "tool", "tool_call_id": "call_2", "content": (
        "Traceback (most recent call last):\n  File \"test_calc.py\", line 3, in test_add\n"
        "AssertionError: add(2, 2) == 0, expected 4")},
    {"role": "assistant", "content": "The sign is wrong; fixing it.", "tool_calls": [
        call("call_3", "write_file", path="calc.py", text="def add(a, b):\n    return a + b\n")]},
    {"role": "tool", "tool_call_id": "call_3", "content": "wrote 2 lines"},
    {"role": "assistant", "content": None, "tool_calls": [call("call_4", "run",
                                                               command="pytest -q")]},
    {"role": "tool", "tool_call_id": "call_4", "content": "1 passed in 0.01s"},
    {"role": "user", "content": "Also check the README mentions add()."},
]

TOOLS = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a file.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]


class LispOnly(Strategy):
    """A strategy that renders PTC-Lisp runs only."""

    name = "lisp-only"

    def to_messages(self, turns, memory, ctx):
        if ctx.is_transcript:
            raise StrategyNotApplicable("needs PTC-Lisp turns (REPL memory), not a chat "
                                        "transcript")
        return [ctx.message("system", ctx.system_prompt), ctx.message("user", ctx.mission)]


def as_anthropic(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    from turnpress.core.providers import to_anthropic

    system, out = to_anthropic(messages)
    return system, out  # type: ignore[return-value]


# -- snapshots: every built-in strategy on the transcript -----------------------------------


@pytest.mark.parametrize("name", strategy_names())
def test_compress_snapshot_each_strategy(name: str, snapshot) -> None:
    """compress() output for parallel tool calls and an error, per built-in strategy
    (OpenAI shape, then the Anthropic shape of the same input); a strategy that does
    not apply to transcripts is snapshotted as its message."""
    try:
        openai = compress(TRANSCRIPT, strategy=name, tools=TOOLS)
        anthropic = compress(as_anthropic(TRANSCRIPT), strategy=name, tools=TOOLS,
                             format="anthropic")
    except StrategyNotApplicable as exc:
        assert snapshot == f"StrategyNotApplicable: {exc}\n"
        return
    text = ("== openai ==\n" + json.dumps(openai, indent=2, ensure_ascii=False)
            + "\n\n== anthropic (system, messages) ==\n"
            + json.dumps(anthropic, indent=2, ensure_ascii=False) + "\n")
    assert snapshot == text


def test_full_history_is_the_identity_on_the_example() -> None:
    assert compress(TRANSCRIPT, strategy="full-history") == TRANSCRIPT
    assert compress(TRANSCRIPT, strategy=False) == TRANSCRIPT


def test_default_strategy_is_smaller_and_keeps_the_ask() -> None:
    out = compress(TRANSCRIPT)
    assert count_tokens(out) < count_tokens(TRANSCRIPT)
    assert out[0] == TRANSCRIPT[0]
    assert "Also check the README mentions add()." in out[-1]["content"]


def test_input_is_not_modified() -> None:
    before = json.dumps(TRANSCRIPT, sort_keys=True)
    for name in strategy_names():
        compress(TRANSCRIPT, strategy=name)
        compress(as_anthropic(TRANSCRIPT), strategy=name, format="anthropic")
    assert json.dumps(TRANSCRIPT, sort_keys=True) == before


def test_pure_and_deterministic() -> None:
    assert compress(TRANSCRIPT, strategy="observation-masking") == compress(
        TRANSCRIPT, strategy="observation-masking")


# -- lists with no turn yet, or ending in the middle of a turn ---------------------------------


def test_no_assistant_message_yet_is_sent_as_is() -> None:
    for name in strategy_names():
        for head in (TRANSCRIPT[:1], TRANSCRIPT[:2], TRANSCRIPT[1:2]):
            assert compress(head, strategy=name) == head
            compressor = Compressor(name)
            compressor.extend(head)
            assert compressor.messages() == head
    system, out = compress({"system": "Be brief.", "messages": []}, format="anthropic")
    assert (system, out) == ([{"type": "text", "text": "Be brief.",
                               "cache_control": {"type": "ephemeral"}}], [])
    with pytest.raises(ValueError, match="no-such"):
        compress(TRANSCRIPT[:2], strategy="no-such")


def test_empty_list() -> None:
    assert compress([]) == []
    assert compress({"messages": []}, format="anthropic") == ("", [])
    assert Compressor().messages() == []


def test_trailing_user_message_is_feedback_of_the_last_turn() -> None:
    out = compress(TRANSCRIPT, strategy="rolling-window")
    assert out[-1] == TRANSCRIPT[-1]


def test_tool_results_of_the_last_call_are_shown() -> None:
    out = compress(TRANSCRIPT[:5])  # ends with the results of the parallel calls
    assert "AssertionError: add(2, 2) == 0" in out[-1]["content"]


def test_usage_key_is_read_not_sent() -> None:
    logged = [*TRANSCRIPT[:2], {**TRANSCRIPT[2], "usage": {"prompt_tokens": 120}},
              *TRANSCRIPT[3:5]]
    assert compress(logged, strategy="full-history") == TRANSCRIPT[:5]


def test_turns_left_reaches_the_strategy() -> None:
    class ShowsTurnsLeft(Strategy):
        name = "shows-turns-left"

        def to_messages(self, turns, memory, ctx):
            return [ctx.message("user", ctx.turns_left_line(ctx.turns_left))]

    out = compress(TRANSCRIPT, strategy=ShowsTurnsLeft, turns_left=7)
    assert out == [{"role": "user", "content": "Turns left: 7"}]


def test_sdk_message_objects_are_accepted() -> None:
    from openai.types.chat import ChatCompletionMessage

    reply = ChatCompletionMessage.model_validate(TRANSCRIPT[2])
    assert compress([*TRANSCRIPT[:2], reply, *TRANSCRIPT[3:5]],
                    strategy="full-history") == TRANSCRIPT[:5]


# -- Anthropic -------------------------------------------------------------------------------


def test_anthropic_shapes_and_breakpoints() -> None:
    system, messages = as_anthropic(TRANSCRIPT)
    default = compress((system, messages), format="anthropic")
    assert any("cache_control" in block for block in default[0])
    by_pair = compress((system, messages), format="anthropic",
                       strategy="single-user-coalesced")
    by_body = compress({"system": system, "messages": messages}, format="anthropic",
                       strategy="single-user-coalesced")
    assert by_pair == by_body
    out_system, out = by_pair
    assert any("cache_control" in block for block in out_system)
    roles = [m["role"] for m in out]
    # the view, then the user's newest request as sent (ux-b item 2); to_anthropic may
    # merge the two user messages into one
    assert [r for k, r in enumerate(roles) if not k or roles[k - 1] != r] == ["user"]
    assert "Also check the README" in json.dumps(out[-1])
    _, full = compress((system, messages), format="anthropic",
                                 strategy="full-history")
    assert [m["role"] for m in full] == [m["role"] for m in messages]
    marked = [b for m in full for b in m["content"] if isinstance(m["content"], list)
              and "cache_control" in b]
    assert marked, "full-history marks its append-only end"


def test_anthropic_is_error_flag_is_kept() -> None:
    system, messages = as_anthropic(TRANSCRIPT[:5])
    messages[-1]["content"][1]["is_error"] = True
    _, out = compress((system, messages), format="anthropic", strategy="full-history")
    results = [b for b in out[-1]["content"] if b["type"] == "tool_result"]
    assert [b.get("is_error", False) for b in results] == [False, True]


def test_anthropic_compressor_matches_compress() -> None:
    system, messages = as_anthropic(TRANSCRIPT)
    for name in ("single-user-coalesced", "observation-masking", "full-history"):
        compressor = Compressor(name, format="anthropic", system=system)
        for k, message in enumerate(messages, 1):
            compressor.add(message)
            assert compressor.messages() == compress((system, messages[:k]), strategy=name,
                                                     format="anthropic"), (name, k)



@pytest.mark.parametrize("fmt", ["openai", "responses"])
def test_compressor_system_is_the_first_message_outside_anthropic(fmt: str) -> None:
    """``Compressor(system=...)`` with an OpenAI format is the conversation's first
    message, as ``compress`` of the list starting with it (it had been dropped without
    a word); a system prompt that is not text is refused."""
    conversation = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    compressor = Compressor("full-history", format=fmt, system="You are X")
    compressor.extend(conversation)
    expected = compress([{"role": "system", "content": "You are X"}, *conversation],
                        strategy="full-history", format=fmt)
    assert compressor.messages() == expected
    assert expected[0] == {"role": "system", "content": "You are X"}
    with pytest.raises(ValueError, match="system must be a string or a list of text blocks"):
        Compressor(format=fmt, system=42)



GREETING = [{"role": "system", "content": "s"},
            {"role": "assistant", "content": "Hi! How can I help?"},
            {"role": "user", "content": "go on"}]


@pytest.mark.parametrize("name", strategy_names())
def test_a_run_that_starts_with_the_assistant_has_no_mission(name: str) -> None:
    """A greeting bot's run (system, then the assistant speaks first): the user message
    after the greeting is that turn's feedback, not a mission. No strategy sends it
    twice (the coalesced ones put it before the greeting too) nor makes a USER message
    of nothing (there was no user message before the greeting)."""
    from turnpress.plugins.readers._messages_to_trace import build_trace
    from turnpress.plugins.readers.openai_chat import message_entries

    trace = build_trace(message_entries(GREETING, "messages"), where="messages", source="")
    assert trace.mission == "" and trace.system_prompt == "s"
    try:
        out = compress(GREETING, strategy=name)
    except StrategyNotApplicable:
        return
    users = [m["content"] for m in out if m["role"] == "user"]
    assert "" not in users
    assert sum("go on" in u for u in users) == 1, out
    if name in ("price-scheduled", "checkpoint-coalesced"):
        assert out == GREETING  # nothing to compress yet: the run as it was
    _, anthropic = compress(("s", GREETING[1:]), strategy=name, format="anthropic")
    assert all(m["content"] for m in anthropic)



IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}


@pytest.mark.parametrize("name", strategy_names())
def test_an_image_in_the_mission_is_sent_by_every_strategy(name: str) -> None:
    """The mission's image or PDF (a part that is not text) is what the user gave: the
    coalesced views sent only its ``[image]`` / ``[document]`` marker once the run made a
    tool call; now the view's USER message carries the part after its text, in both
    shapes (an Anthropic document as the block the reader kept)."""
    chat = [{"role": "user", "content": [{"type": "text", "text": "Describe this chart"}, IMAGE]},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "ok"}]
    try:
        out = compress(chat, strategy=name)
    except StrategyNotApplicable:
        return
    parts = [p for m in out if isinstance(m["content"], list) for p in m["content"]]
    assert IMAGE in parts, out
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "iVBORw0KGgo="}}
    pdf = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                          "data": "JVBERi0="}}
    anthropic = [{"role": "user", "content": [{"type": "text", "text": "Describe"}, image, pdf]},
                 {"role": "assistant", "content": [{"type": "tool_use", "id": "a",
                                                    "name": "f", "input": {}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a",
                                               "content": "ok"}]}]
    _, shaped = compress(("s", anthropic), strategy=name, format="anthropic")
    blocks = [b for m in shaped if isinstance(m["content"], list) for b in m["content"]]
    assert any(b.get("type") == "image" and b.get("source") == image["source"]
               for b in blocks), shaped
    # a PDF, which the OpenAI shape holds only as its [document] marker, too; also
    # when it is the mission's only block (which the reader makes a string)
    assert any(b.get("type") == "document" and b.get("source") == pdf["source"]
               for b in blocks), shaped
    _, alone = compress(("s", [{"role": "user", "content": [pdf]}, *anthropic[1:]]),
                        strategy=name, format="anthropic")
    assert pdf in [{k: v for k, v in b.items() if k != "cache_control"}
                   for m in alone if isinstance(m["content"], list) for b in m["content"]]



def test_ctx_feedback_of_a_transcript_turn_is_what_came_after_its_call() -> None:
    """A plugin strategy written as the README's "Writing a strategy" shows the newest
    turn with ``ctx.feedback``: on a chat transcript that is the tool results and the
    user's words as sent (it showed "Result: nil", the turn having no REPL result)."""

    class NewestTurn(Strategy):
        name = "newest-turn-test"

        def to_messages(self, turns, memory, ctx):
            return [ctx.message("user", "\n\n".join(
                [ctx.mission, ctx.feedback(turns[-1], ctx.turns_left)]))]

    chat = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "THE RESULT"},
            {"role": "user", "content": "and then?"}]
    assert compress(chat, strategy=NewestTurn) == [
        {"role": "user", "content": "go\n\nTHE RESULT\n\nand then?"}]
    assert compress(chat, strategy=NewestTurn, turns_left=2)[0]["content"].endswith(
        "and then?\n\nTurns left: 2")


# -- errors (item 4) --------------------------------------------------------------------------


@pytest.mark.parametrize(("messages", "expected"), [
    ([{"role": "user", "content": "hi"}, {"role": "robot", "content": "x"}],
     "message 1: unknown role 'robot'"),
    ([{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c", "content": "x"}],
     "message 1: tool message with no matching call"),
    ([*TRANSCRIPT[:3], {"role": "tool", "tool_call_id": "call_9", "content": "x"}],
     "message 3: tool message with no matching call: tool_call_id 'call_9'"),
    ([{"role": "user", "content": {"text": "hi"}}],
     "message 0: \"content\" must be a string, a list of content parts or null, got dict"),
    ([{"role": "user", "content": "hi"}, "not a message"], "message 1: expected a JSON object"),
    ([{"role": "assistant", "content": "hi"}], "starts with an assistant message"),
])
def test_unreadable_list_names_the_index(messages: list[Any], expected: str) -> None:
    with pytest.raises(ValueError, match=r"^messages: ") as info:
        compress(messages)
    assert expected in str(info.value)
    assert "\n" not in str(info.value)
    compressor = Compressor()
    with pytest.raises(ValueError) as incremental:
        compressor.extend(messages)
    assert str(incremental.value) == str(info.value)


def test_anthropic_error_names_the_anthropic_index() -> None:
    system, messages = as_anthropic(TRANSCRIPT[:5])
    bad = [*messages, {"role": "system", "content": "x"}]
    with pytest.raises(ValueError, match=r"message 3: unknown role 'system'"):
        compress((system, bad), format="anthropic")
    compressor = Compressor(format="anthropic", system=system)
    compressor.extend(messages)
    with pytest.raises(ValueError, match=r"message 3: unknown role 'system'"):
        compressor.add(bad[-1])


def test_bad_message_leaves_the_compressor_unchanged() -> None:
    compressor = Compressor("full-history")
    compressor.extend(TRANSCRIPT[:3])
    with pytest.raises(ValueError, match="message 3"):
        compressor.add({"role": "tool", "tool_call_id": "nope", "content": "x"})
    assert len(compressor) == 3
    compressor.extend(TRANSCRIPT[3:])
    assert compressor.messages() == TRANSCRIPT


def test_not_a_list() -> None:
    with pytest.raises(ValueError, match="expected a list of message objects, got dict"):
        compress({"role": "user", "content": "hi"})
    # what to pass instead: a lone message in a list, a request body's "messages"
    with pytest.raises(ValueError, match=r"got dict; pass a list of them, \[message\]$"):
        compress({"role": "user", "content": "hi"})
    with pytest.raises(ValueError, match=r"got dict; pass its \"messages\" list \(and its "
                                         r"\"tools\" as tools=\)$"):
        compress({"model": "m", "messages": TRANSCRIPT})
    # QA: a whole Anthropic or Responses body was told to pass its "messages" list (or
    # nothing); each is taken whole with its format
    body = {"model": "claude", "system": "Be brief.", "messages": [
        {"role": "user", "content": "hi"}]}
    with pytest.raises(ValueError, match=r"got dict; an Anthropic Messages body is taken "
                                         r"whole with format=\"anthropic\" \(its system, "
                                         r"messages and tools\)$"):
        compress(body)
    assert compress(body, format="anthropic")[1][0]["content"][0]["text"] == "hi"
    request = {"model": "gpt", "instructions": "Be brief.", "input": [
        {"role": "user", "content": "hi"}]}
    with pytest.raises(ValueError, match=r"got dict; an OpenAI Responses request is taken "
                                         r"whole with format=\"responses\""):
        compress(request)
    assert compress(request, format="responses")["input"] == request["input"]
    with pytest.raises(ValueError, match="expected a list of message objects, got str"):
        compress("hi")
    with pytest.raises(ValueError, match=r"\(system, messages\) pair"):
        compress([{"role": "user", "content": "hi"}], format="anthropic")



def test_any_iterable_of_messages_is_read_as_a_list() -> None:
    """A generator or another iterable of messages is what its list is (Compressor.extend
    takes any iterable; compress refused all but a sequence)."""
    for name in ("full-history", "rolling-window"):
        assert compress((m for m in TRANSCRIPT), strategy=name) == compress(
            TRANSCRIPT, strategy=name)
        assert compress(iter(TRANSCRIPT), strategy=name) == compress(TRANSCRIPT, strategy=name)


@pytest.mark.parametrize("bad", [-3, 2.5, True, "5"])
def test_turns_left_is_a_count_of_turns(bad: Any) -> None:
    """turns_left below zero, or not an int, is an error in compress and in
    Compressor.messages (it was taken as it came)."""
    message = r"^turns_left must be a number of turns \(an int >= 0\) or None"
    with pytest.raises(ValueError, match=message):
        compress(TRANSCRIPT, turns_left=bad)
    compressor = Compressor()
    compressor.extend(TRANSCRIPT)
    with pytest.raises(ValueError, match=message):
        compressor.messages(turns_left=bad)
    assert compress(TRANSCRIPT, turns_left=0) == compressor.messages(turns_left=0)



def test_a_prompt_of_the_system_prompt_alone_is_no_anthropic_request() -> None:
    """trim-messages, as LangChain's trim_messages, keeps nothing but the system prompt
    once a tool-calling run's mission no longer fits (no user message is left to start
    on): in the Anthropic shape that is a request the API refuses, so compress and
    Compressor say what happened and what to do; the OpenAI shape is as the strategy
    gives it."""
    messages = [{"role": "user", "content": "Audit"}]
    for i in range(10):
        messages += [{"role": "assistant", "content": [
                         {"type": "tool_use", "id": f"t{i}", "name": "cat", "input": {}}]},
                     {"role": "user", "content": [
                         {"type": "tool_result", "tool_use_id": f"t{i}", "content": "x" * 2000}]}]
    strategy = "trim-messages:max_tokens=3000"
    expected = (r"^strategy 'trim-messages' left no message after the system prompt, and the "
                r"Anthropic API needs one; give it more room \(its options: max_tokens=3000, ")
    with pytest.raises(ValueError, match=expected):
        compress({"system": "s", "messages": messages}, strategy=strategy, format="anthropic")
    compressor = Compressor(strategy, format="anthropic", system="s")
    compressor.extend(messages)
    with pytest.raises(ValueError, match=expected):
        compressor.messages()
    _, roomy = compress({"system": "s", "messages": messages},
                        strategy="trim-messages:max_tokens=30000", format="anthropic")
    assert roomy


def test_unknown_format_and_strategy() -> None:
    with pytest.raises(ValueError, match="unknown format 'gemini'; use one of openai, anthropic"):
        compress(TRANSCRIPT, format="gemini")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no-such-strategy"):
        Compressor("no-such-strategy")


def test_strategy_not_applicable_is_raised_at_creation() -> None:
    with pytest.raises(StrategyNotApplicable,
                       match=r"^strategy 'lisp-only' does not apply to chat transcripts: needs "
                             "PTC-Lisp turns"):
        Compressor(LispOnly)
    with pytest.raises(StrategyNotApplicable):
        compress(TRANSCRIPT, strategy=LispOnly)


# -- properties -------------------------------------------------------------------------------

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@st.composite
def content(draw: st.DrawFn) -> Any:
    if draw(st.booleans()):
        return draw(TEXT)
    return [{"type": "text", "text": t} for t in draw(st.lists(TEXT, min_size=1, max_size=2))]


@st.composite
def transcripts(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Random OpenAI chat transcripts: a head, then turns with 0-3 (parallel) tool calls,
    their results (issue 19: every call answered, as provider APIs require, but maybe
    not the last turn's), optional user messages."""
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(content())})
    messages.append({"role": "user", "content": draw(content())})
    serial = 0
    for _ in range(draw(st.integers(0, 5))):
        calls = []
        for _ in range(draw(st.integers(0, 3))):
            serial += 1
            args = draw(st.sampled_from(["{}", '{"path": "a.py"}', "", "not json", "[1, 2]"]))
            calls.append({"id": f"call_{serial}", "type": "function",
                          "function": {"name": draw(st.sampled_from(["ls", "run", "read"])),
                                       "arguments": args}})
        assistant: dict[str, Any] = {"role": "assistant"}
        if calls:
            assistant["content"] = draw(st.none() | content())
            assistant["tool_calls"] = calls
        else:
            assistant["content"] = draw(content())
        if draw(st.booleans()):
            assistant["name"] = "agent"
        messages.append(assistant)
        partial = draw(st.integers(0, 5)) == 0  # the run may end before the last answers
        for c in calls:
            if not partial:
                result = draw(st.sampled_from(["ok", "Traceback (most recent call last):\n"
                                               "ValueError: x", "<returncode>1</returncode>"]))
                messages.append({"role": "tool", "tool_call_id": c["id"],
                                 "content": draw(st.just(result) | TEXT)})
        if partial and calls:
            break
        for _ in range(draw(st.integers(0, 2))):
            messages.append({"role": "user", "content": draw(content())})
    return messages


PROPERTY = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(transcripts())
def test_full_history_is_the_identity(messages: list[dict[str, Any]]) -> None:
    """compress() with full-history returns its input unchanged (issue 10 item 1)."""
    before = json.dumps(messages)
    assert compress(messages, strategy="full-history") == messages
    assert json.dumps(messages) == before


@PROPERTY
@given(transcripts(), st.sampled_from(strategy_names()))
def test_compressor_equals_compress_after_every_add(messages: list[dict[str, Any]],
                                                    name: str) -> None:
    """Compressor.messages() after each add equals compress() of the list so far, and its
    incrementally read turns are the reader's turns of that list."""
    from turnpress.plugins.readers.openai_chat import trace_from_messages

    compressor = Compressor(name)
    for k, message in enumerate(messages, 1):
        compressor.add(message)
        assert compressor.messages() == compress(messages[:k], strategy=name), k
        if any(m["role"] == "assistant" for m in messages[:k]):
            assert compressor.turns == trace_from_messages(messages[:k]).turns, k


@PROPERTY
@given(transcripts(), st.sampled_from(strategy_names()))
def test_every_strategy_sends_a_valid_conversation(messages: list[dict[str, Any]],
                                                   name: str) -> None:
    """Every tool call the output carries is answered, as the provider requires."""
    out = compress(messages, strategy=name)
    pending: set[str] = set()
    for m in out:
        assert m["role"] in ("system", "user", "assistant", "tool")
        if m["role"] == "tool":
            assert m["tool_call_id"] in pending
        elif m["role"] == "assistant":
            pending = {c["id"] for c in m.get("tool_calls") or ()}


# -- the LangChain adapter --------------------------------------------------------------------


def test_langchain_adapter_round_trip_and_compress() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.messages import AIMessage, ToolMessage

    from turnpress.integrations.langchain import (
        LangChainCompressor,
        compress_messages,
        from_openai,
        to_openai,
    )

    history = from_openai(TRANSCRIPT)
    assert isinstance(history[2], AIMessage) and isinstance(history[3], ToolMessage)
    assert [c["id"] for c in history[2].tool_calls] == ["call_1", "call_2"]
    assert history[4].tool_call_id == "call_2"
    # the OpenAI form reads as the same transcript (a null content becomes "")
    assert compress(to_openai(history), strategy="single-user-coalesced") == compress(
        TRANSCRIPT, strategy="single-user-coalesced")
    out = compress_messages(history, strategy="observation-masking")
    assert to_openai(out) == to_openai(from_openai(compress(
        TRANSCRIPT, strategy="observation-masking")))
    compressor = LangChainCompressor("rolling-window")
    for k, message in enumerate(history, 1):
        compressor.add(message)
        assert to_openai(compressor.messages()) == to_openai(
            compress_messages(history[:k], strategy="rolling-window")), k
