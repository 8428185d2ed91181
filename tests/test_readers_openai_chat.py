"""The openai-chat reader: mapping (DESIGN §10), billed usage, exact replay, bad input."""

from __future__ import annotations

import json

import pytest
from transcripts_helpers import data, load_json, sent_before_each_assistant

from turnpress import Failure, load_trace
from turnpress.core.model import ToolCall, Usage
from turnpress.core.providers import to_openai
from turnpress.core.trace import TraceError, iter_traces
from turnpress.plugins.readers.openai_chat import detect, trace_from_messages


def without_usage(messages):
    return [{k: v for k, v in m.items() if k != "usage"} for m in messages]


def test_request_body_mapping():
    trace = load_trace(data("openai/request.json"))
    assert trace.source == "openai-chat" and trace.name == "request"
    assert trace.system_prompt == "You are a careful coding agent."
    assert trace.mission == "Fix the failing test in calc.py."
    assert [m["role"] for m in trace.preamble] == ["system", "user"]
    assert set(trace.tools) == {"read_file", "run"}
    assert trace.tools["run"].params == {"command": "string"}
    assert len(trace.turns) == trace.max_turns == 4
    first, second, third, last = trace.turns
    # parallel tool calls: one turn, two calls, each with its own result
    assert first.program == first.raw_response == "Reading both files."
    assert first.tool_calls == (
        ToolCall("read_file", ({"path": "calc.py"},), "def add(a, b):\n    return a - b\n"),
        ToolCall("read_file", ({"path": "test_calc.py"},),
                 "from calc import add\n\ndef test_add():\n    assert add(2, 2) == 4\n"))
    assert first.success and first.result is None and dict(first.memory) == {}
    assert [m["role"] for m in first.messages] == ["assistant", "tool", "tool"]
    # only tool calls: program is ""; a traceback in the feedback fails the turn
    assert second.program == ""
    assert second.result == Failure("exception",
                                    "AttributeError: module 'calc' has no attribute 'mul'")
    assert third.success and last.tool_calls == () and last.messages[0]["content"] == (
        "Fixed: add now adds.")


def test_usage_is_kept_per_turn_and_left_out_of_the_replayed_message():
    trace = load_trace(data("openai/request.json"))
    assert [t.usage for t in trace.turns] == [Usage(1200, 0), Usage(1350, 1152),
                                              Usage(1480, 1280), Usage(1530, 1408)]
    assert all("usage" not in m for t in trace.turns for m in t.messages)


def test_run_without_usage_invalid_arguments_and_user_feedback():
    trace = load_trace(data("openai/no_usage.json"))
    assert all(t.usage is None for t in trace.turns)
    first = trace.turns[0]
    assert first.tool_calls[0].args == ("{city: Paris",)  # invalid JSON: the raw string
    assert first.prints == ("Please send valid JSON arguments.",)
    assert [m["role"] for m in first.messages] == ["assistant", "tool", "user"]


@pytest.mark.parametrize("rel", ["openai/request.json", "openai/no_usage.json"])
def test_full_history_replays_each_prompt_exactly(rel):
    raw = load_json(rel)
    messages = without_usage(raw["messages"] if isinstance(raw, dict) else raw)
    trace = load_trace(data(rel))
    expected = sent_before_each_assistant(messages)
    assert len(expected) == len(trace.turns)
    for n, prefix in enumerate(expected, 1):
        prompt = to_openai(trace.prompt(n, "full-history"))
        assert json.dumps(prompt) == json.dumps(prefix)


def test_jsonl_holds_one_run_a_line():
    names = [t.name for t in iter_traces(data("openai/runs.jsonl"))]
    assert names == ["runs#1", "runs#2"]


@pytest.mark.parametrize("value, expected", [
    ([], True), ([{"role": "user", "content": "x"}], True), ({"messages": []}, True),
    ([1, 2], False), ({"trajectory_format": "mini-swe-agent-1.1", "messages": []}, False),
    ({"system": "s", "messages": []}, False), ("text", False)])
def test_detect(value, expected):
    assert detect(value, None) is expected


@pytest.mark.parametrize("messages, problem", [
    ([], "messages: empty run: the transcript has no messages"),
    ([{"role": "user", "content": "m"}], "messages: empty run: no assistant message"),
    ([{"role": "user", "content": "m"}, {"role": "critic", "content": "x"}],
     "messages: message 1: unknown role 'critic'"),
    ([{"role": "user", "content": "m"}, {"role": "tool", "tool_call_id": "a", "content": "x"}],
     "messages: message 1: tool message with no matching call"),
    # fuzz traces seed 22 case 1195: a list as tool_call_id was a TypeError traceback
    ([{"role": "user", "content": "m"},
      {"role": "assistant", "content": None, "tool_calls": [
          {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": ["c1"], "content": "x"}],
     "messages: message 2: tool message with no matching call: tool_call_id ['c1']"),
    ([{"role": "assistant", "content": "hi"}], "messages: message 0: the run starts with an "
                                               "assistant message"),
    ([{"role": "user", "content": 3}], "messages: message 0: \"content\" must be a string"),
    ([{"role": "user", "content": "m"}, {"role": "assistant", "content": None}],
     "messages: message 1: an assistant message needs \"content\""),
    ("nope", "messages: \"messages\" must be a list"),
    # a part every strategy's messages would carry on, and check_messages refuse: the
    # reader names it (render of the run ended in a traceback)
    ([{"role": "user", "content": [{"type": "text"}]}],
     "messages: message 0: content part 0 {'type': 'text'} is a 'text' part without a "
     "string 'text'"),
    ([{"role": "user", "content": ["plain"]}],
     "messages: message 0: content part 0 'plain' is not a dict but str"),
])
def test_trace_from_messages_names_the_message_and_the_problem(messages, problem):
    with pytest.raises(TraceError) as info:
        trace_from_messages(messages)
    assert str(info.value).startswith(problem)
    assert isinstance(info.value, ValueError)


def test_trace_from_messages_takes_tools_and_where():
    trace = trace_from_messages(
        [{"role": "user", "content": "go"}, {"role": "assistant", "content": "done"}],
        tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}])
    assert set(trace.tools) == {"f"} and trace.mission == "go" and trace.system_prompt == ""
    with pytest.raises(TraceError, match=r"^run 7: message 1: unknown role"):
        trace_from_messages([{"role": "user", "content": "m"}, {"role": "x", "content": ""}],
                            where="run 7")


@pytest.mark.parametrize("content, reason, message", [
    ("<returncode>2</returncode>\n<output>\nno such file\n</output>", "nonzero_returncode",
     "return code 2: no such file"),
    ("<returncode>0</returncode>\nTraceback (most recent call last):\nValueError: x", None, None),
    ("Traceback (most recent call last):\n  File \"a\"\nKeyError: 'k'", "exception",
     "KeyError: 'k'"),
    ("all good", None, None)])
def test_failure_markers(content, reason, message):
    trace = trace_from_messages([
        {"role": "user", "content": "m"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "1", "type": "function", "function": {"name": "sh", "arguments": ""}}]},
        {"role": "tool", "tool_call_id": "1", "content": content}])
    turn = trace.turns[0]
    assert turn.tool_calls[0].args == ()
    assert (turn.result == Failure(reason, message)) if reason else turn.success


def test_a_message_nested_deeper_than_a_trace_may_be_is_refused(tmp_path):
    """Issue 13 item 3 (fuzz traces seed 24 case 1998): a transcript message nested past
    the trace depth cap was read, then its saved copy did not load; now it is refused."""
    from turnpress.core import codec

    deep: object = "x"
    for _ in range(codec.MAX_JSON_DEPTH + 5):
        deep = [deep]
    messages = [{"role": "user", "content": "go"},
                {"role": "assistant", "content": "ok", "extra": deep}]
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(messages))
    with pytest.raises(TraceError, match=r"deep\.json: turn 1: a message nested deeper "
                                         r"than \d+ levels"):
        load_trace(path)


def test_calls_that_share_an_id_are_an_error_that_says_duplicate():
    """ux-a item 9 read two calls with id c1 by answer order; issue 19: a provider API
    refuses duplicate ids, so the reader says "duplicate" (and names both calls)."""
    call = {"type": "function", "function": {"name": "bash", "arguments": '{"command": "pwd"}'}}
    with pytest.raises(TraceError, match=r"message 1: duplicate tool call id 'c1': "
                                         r"tool_calls\[0\] and tool_calls\[1\]"):
        trace_from_messages([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None,
             "tool_calls": [{**call, "id": "c1"}, {**call, "id": "c1"}]},
            {"role": "tool", "tool_call_id": "c1", "content": "r1"},
            {"role": "tool", "tool_call_id": "c1", "content": "r2"},
            {"role": "assistant", "content": "done"}])


def _with_usage(usage):
    return [{"role": "system", "content": "s"}, {"role": "user", "content": "go"},
            {"role": "assistant", "content": "done", "usage": usage}]


def test_usage_counts_written_as_integer_valued_floats_are_integers():
    """QA: one count typed 1500.0 (as some proxies write) made the whole run unreadable;
    an integer-valued float is that integer (DESIGN §10, billed usage)."""
    trace = trace_from_messages(_with_usage(
        {"prompt_tokens": 1500.0, "prompt_tokens_details": {"cached_tokens": 1024.0}}))
    assert trace.turns[0].usage == Usage(1500, 1024)
    assert type(trace.turns[0].usage.prompt_tokens) is int
    anthropic = trace_from_messages(_with_usage(
        {"input_tokens": 10.0, "cache_read_input_tokens": 1000.0,
         "cache_creation_input_tokens": 0.0}))
    assert anthropic.turns[0].usage == Usage(1010, 1000, 0)


@pytest.mark.parametrize(("value", "shown"), [(1500.5, "1500.5"), (-3, "-3"), (-2.0, "-2"),
                                               ("1500", "'1500'"), (True, "True"),
                                               (float("inf"), "inf")])
def test_usage_counts_that_are_not_whole_non_negative_numbers_are_refused(value, shown):
    with pytest.raises(TraceError, match=r"message 2: usage.prompt_tokens must be a "
                                         r"non-negative integer, got " + shown):
        trace_from_messages(_with_usage({"prompt_tokens": value}))
