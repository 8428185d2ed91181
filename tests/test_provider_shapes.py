"""Provider shapes agent loops really send (ux-b items 4, 6, 7): Anthropic extended
thinking, OpenAI ``developer`` and legacy ``function_call`` messages, role alternation
in the Anthropic shape, and bad cache breakpoints from a strategy."""

from __future__ import annotations

import copy
import itertools
import json

import pytest
from click.testing import CliRunner
from plugin_helpers import make_plugin

from turnpress import Compressor, compress
from turnpress.cli import main
from turnpress.core.breakpoints import BreakpointError
from turnpress.core.providers import prompt_with_breakpoints, to_anthropic, to_openai
from turnpress.core.registry import reset_registry
from turnpress.core.trace import TraceError
from turnpress.plugins.readers import anthropic_messages, openai_chat

THINKING = {"type": "thinking", "thinking": "The user wants a count; ls then wc.",
            "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}

ANTHROPIC_RUN = {
    "system": "You are a shell agent.",
    "messages": [
        {"role": "user", "content": "How many files are in /tmp?"},
        {"role": "assistant", "content": [
            THINKING, REDACTED, {"type": "text", "text": "Counting."},
            {"type": "tool_use", "id": "tu1", "name": "bash",
             "input": {"command": "ls /tmp | wc -l"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "tu1", "content": "42"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "42 it is.", "signature": "sig2"},
            {"type": "text", "text": "There are 42 files."}]},
        {"role": "user", "content": "Thanks."},
    ]}


def alternates(messages: list[dict]) -> bool:
    return all(a["role"] != b["role"] for a, b in itertools.pairwise(messages))


# -- item 4: what providers really send ------------------------------------------------


def test_thinking_blocks_are_replayed_exactly_by_full_history():
    """ux-b item 4: Anthropic thinking / redacted_thinking blocks are read, kept in the
    turn's original messages, and sent back verbatim (signature and all, first in
    their message) by full-history; text views ignore them."""
    body = copy.deepcopy(ANTHROPIC_RUN)
    system, out = compress(body, strategy="full-history", format="anthropic")
    assert body == ANTHROPIC_RUN
    assert system[0]["text"] == "You are a shell agent."
    assert out[1]["content"][:2] == [THINKING, REDACTED]
    assert [b["type"] for b in out[1]["content"]] == [
        "thinking", "redacted_thinking", "text", "tool_use"]
    assert out[3]["content"][0] == {"type": "thinking", "thinking": "42 it is.",
                                    "signature": "sig2"}
    trace = anthropic_messages.read(copy.deepcopy(ANTHROPIC_RUN), "run.json")
    first = trace.turns[0]
    assert first.messages[0]["thinking_blocks"] == [THINKING, REDACTED]
    assert first.program == "Counting."
    assert "ls then wc" not in json.dumps([first.program, first.raw_response])


def test_thinking_blocks_survive_the_compressor_and_a_compressing_strategy():
    """ux-b item 4: the incremental Compressor reads thinking blocks too, and a
    compressing strategy's output is still a valid alternating request."""
    compressor = Compressor("full-history", format="anthropic",
                            system=ANTHROPIC_RUN["system"])
    compressor.extend(copy.deepcopy(ANTHROPIC_RUN["messages"]))
    assert compressor.messages() == compress(ANTHROPIC_RUN, strategy="full-history",
                                             format="anthropic")
    _, out = compress(ANTHROPIC_RUN, format="anthropic")
    assert out and alternates(out)


def test_developer_role_is_an_instruction_message():
    """ux-b item 4: OpenAI's ``developer`` role (the system prompt of newer models)
    is read like ``system``: the trace's system prompt, replayed as is, Anthropic
    ``system``."""
    messages = [
        {"role": "developer", "content": "You are terse."},
        {"role": "user", "content": "List the files."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
        {"role": "developer", "content": "Answer in one line."},
    ]
    assert compress(copy.deepcopy(messages), strategy="full-history") == messages
    trace = openai_chat.trace_from_messages(copy.deepcopy(messages))
    assert trace.system_prompt == "You are terse."
    assert trace.turns[0].prints == ("Answer in one line.",)
    compressor = Compressor()
    compressor.extend(copy.deepcopy(messages))
    assert compressor.messages() == compress(messages)
    assert "You are terse." in json.dumps(compress(messages))
    system, out = to_anthropic(messages[:4])
    assert system == "You are terse."
    assert [m["role"] for m in out] == ["user", "assistant", "user"]
    with pytest.raises(ValueError, match="message 4 is a developer message after"):
        to_anthropic(messages)


@pytest.mark.parametrize("message, index, what", [
    ({"role": "assistant", "content": None,
      "function_call": {"name": "ls", "arguments": "{}"}}, 2, "an assistant \"function_call\""),
    ({"role": "function", "name": "ls", "content": "a.txt"}, 3, "a \"function\" role message"),
])
def test_legacy_function_call_is_one_line_naming_the_message(message, index, what):
    """ux-b item 4: OpenAI's legacy function-calling messages get a one-line error
    naming the message, saying it is the legacy format and how to write it."""
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"},
                {"role": "assistant", "content": "hi"}, {"role": "user", "content": "x"}]
    messages[index] = message
    with pytest.raises(TraceError) as info:
        compress(messages)
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(f"messages: message {index}: {what} is OpenAI's legacy")
    assert "\"tool_calls\"" in text and "\"role\": \"tool\"" in text


def test_function_call_null_is_not_legacy():
    """ux-b item 4: LiteLLM writes ``"function_call": null`` beside tool_calls; that is
    not a legacy call and is kept verbatim."""
    messages = [{"role": "user", "content": "U"},
                {"role": "assistant", "content": "ok", "function_call": None}]
    assert compress(copy.deepcopy(messages), strategy="full-history") == messages


# -- item 6: role alternation in the Anthropic shape ------------------------------------


def test_consecutive_messages_of_one_role_are_merged_in_order():
    """ux-b item 6: to_anthropic never sends two messages of one role in a row; their
    blocks are merged in order, tool results first in a user message."""
    messages = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "mission"},
        {"role": "assistant", "content": "recap 1"},
        {"role": "assistant", "content": "recap 2"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "user", "content": "note first"},
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
        {"role": "user", "content": "and then"},
    ]
    system, out = to_anthropic(messages, [(3, None)])
    assert system == "S"
    assert [m["role"] for m in out] == ["user", "assistant", "user"]
    assert out[1]["content"] == [
        {"type": "text", "text": "recap 1"},
        {"type": "text", "text": "recap 2", "cache_control": {"type": "ephemeral"}},
        {"type": "tool_use", "id": "c1", "name": "ls", "input": {}}]
    assert out[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": "a.txt"},
        {"type": "text", "text": "note first"}, {"type": "text", "text": "and then"}]


def test_progressive_batch_recaps_alternate_in_the_anthropic_shape():
    """ux-b item 6: progressive-batch's recap messages (several assistant messages in a
    row) become one assistant message."""
    messages = [{"role": "user", "content": "Count files, then check /var."}]
    for k in range(1, 5):
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{k}", "name": "bash", "input": {"command": f"c{k}"}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{k}", "content": f"out {k}"}]})
    body = {"system": "S", "messages": messages}
    _, out = compress(body, strategy="progressive-batch:min_preserved=1,batch_size=1",
                      format="anthropic")
    assert out[0]["role"] == "user"
    assert alternates(out)


# -- item 7: a strategy's bad cache_breakpoints() ---------------------------------------

BAD_BREAKPOINTS = """
from turnpress import Strategy, hookimpl

class BadBreakpoints(Strategy):
    name = "bad-bp"
    answer = None
    def to_messages(self, turns, memory, ctx):
        return [ctx.message("system", "s"), ctx.message("user", ctx.mission)]
    def cache_breakpoints(self, turns, memory, ctx):
        import os
        return eval(os.environ["BAD_BP"])

@hookimpl
def register_strategies(register):
    register(BadBreakpoints)
"""


@pytest.mark.parametrize("answer, problem", [
    ("[(0, 'x')]", "item 0 (0, 'x'): the offset must be a non-negative int or None"),
    ("None", "got NoneType None, expected a list of (message_index: int, offset"),
    ("5", "got int 5, expected a list"),
    ("[(0,)]", "item 0 is (0,), expected a (message_index, offset) pair"),
    ("[(1, 3.5)]", "item 0 (1, 3.5): the offset must be a non-negative int"),
    ("[('0', None)]", "item 0 ('0', None): the message index must be an int, got str"),
    ("[(99, 'x')]", "the offset must be"),
    ("[(99, None)]", "item 0 (99, None): message index 99 is out of range (the prompt has "
                     "2 messages, 0..1)"),
])
def test_bad_cache_breakpoints_name_the_strategy_and_plugin(site, monkeypatch, answer,
                                                            problem):
    """ux-b item 7: a bad ``cache_breakpoints()`` result is a one-line ValueError naming
    the strategy and its plugin, from Python and from ``render -f anthropic``."""
    make_plugin(site, "badbp", BAD_BREAKPOINTS)
    monkeypatch.setenv("BAD_BP", answer)
    from turnpress import load_trace
    from turnpress.examples import example_trace_paths

    trace = load_trace(next(iter(example_trace_paths())))
    reset_registry(None)
    with pytest.raises(BreakpointError) as info:
        prompt_with_breakpoints(trace, 2, "bad-bp")
    text = str(info.value)
    assert isinstance(info.value, ValueError) and "\n" not in text
    assert text.startswith("strategy 'bad-bp' of plugin 'badbp' (distribution "
                           "turnpress-badbp 1.0, entry point badbp = tpf_badbp): "
                           "cache_breakpoints() returned a bad result: ")
    assert problem in text
    reset_registry(None)
    result = CliRunner().invoke(main, ["render", "product-research", "-s", "bad-bp",
                                       "-t", "2", "-f", "anthropic"])
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert "strategy 'bad-bp' of plugin 'badbp'" in result.output
    assert problem in result.output


@pytest.mark.parametrize("points", [[(0, "x")], None, 5, [(0,)], [(1, 3.5)]])
def test_to_anthropic_refuses_malformed_breakpoints_with_a_value_error(points):
    """ux-b item 7: to_anthropic given malformed breakpoints raises a one-line
    ValueError saying what a breakpoint must be, not a bare TypeError."""
    with pytest.raises(ValueError, match=r"^cache breakpoints: ") as info:
        to_anthropic([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
                     points)
    assert "\n" not in str(info.value)


# -- items 8 / 9: full-history keeps what the provider needs ------------------------------


def test_anthropic_tool_results_keep_list_content_and_is_error_as_given():
    """ux-b item 8: through compress(format="anthropic") and full-history, a tool_result
    keeps its block-list content and its ``is_error`` (false too); the OpenAI shape of
    the same run does not carry the kept fields."""
    messages = [
        {"role": "user", "content": "Read notes.txt and ls /var."},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "notes.txt"}},
            {"type": "tool_use", "id": "t2", "name": "ls", "input": {"path": "/var"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "is_error": False,
             "content": [{"type": "text", "text": "line1\nline2"}]},
            {"type": "tool_result", "tool_use_id": "t2", "content": "denied", "is_error": True},
            {"type": "text", "text": "Also check /tmp."}]},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "Thanks."},
    ]
    body = {"system": "S", "messages": copy.deepcopy(messages)}
    _, out = compress(body, strategy="full-history", format="anthropic")
    assert out[:4] == messages[:4]
    assert body["messages"] == messages
    trace = anthropic_messages.read(copy.deepcopy(body), "run.json")
    sent = trace.prompt(3, "full-history")
    assert [m for m in to_openai(sent) if "_anthropic" in m] == []
    assert {"role": "tool", "tool_call_id": "t1", "content": "line1\nline2"} in to_openai(sent)


def test_a_shortened_tool_result_is_not_given_its_old_content_back():
    """ux-b item 8: the kept block-list content is used only while a strategy left the
    result's text as it was; ``is_error`` is kept either way."""
    tool = {"role": "tool", "tool_call_id": "t1", "content": "masked",
            "_anthropic": {"content": [{"type": "text", "text": "long output"}],
                           "is_error": False}}
    _, out = to_anthropic([{"role": "user", "content": "U"},
                           {"role": "assistant", "content": None, "tool_calls": [
                               {"id": "t1", "type": "function",
                                "function": {"name": "ls", "arguments": "{}"}}]}, tool])
    assert out[2]["content"] == [{"type": "tool_result", "tool_use_id": "t1",
                                  "content": "masked", "is_error": False}]


def test_langchain_full_history_keeps_status_ids_and_metadata():
    """ux-b item 8: compress_messages under full-history gives back messages equal to
    the input (ToolMessage status, ids, response_metadata); a compressing strategy
    keeps a shortened ToolMessage's ``status="error"``."""
    messages_mod = pytest.importorskip("langchain_core.messages")
    from turnpress.integrations.langchain import LangChainCompressor, compress_messages

    messages = [
        messages_mod.SystemMessage("S", id="s1"),
        messages_mod.HumanMessage("List /var.", id="h1", name="bob"),
        messages_mod.AIMessage("", id="a1", response_metadata={"model_name": "m"},
                               tool_calls=[{"id": "c1", "name": "ls", "args": {}}]),
        messages_mod.ToolMessage("permission denied\n" * 50, tool_call_id="c1",
                                 status="error", id="t1"),
        messages_mod.AIMessage("I cannot read /var.", id="a2"),
        messages_mod.HumanMessage("Try /tmp.", id="h2"),
    ]
    before = [m.model_copy(deep=True) for m in messages]
    out = compress_messages(messages, strategy="full-history")
    assert out == messages and out[3].status == "error" and out[2].id == "a1"
    assert all(a is not b for a, b in zip(out, messages, strict=True))
    assert messages == before
    compressor = LangChainCompressor("full-history")
    compressor.extend(messages)
    assert compressor.messages() == messages
    masked = compress_messages(messages, strategy="observation-masking:window=0,step=1")
    tools = [m for m in masked if m.type == "tool"]
    assert tools and all(m.status == "error" for m in tools)
