"""The anthropic-messages reader: blocks to OpenAI shape and back, is_error, usage."""

from __future__ import annotations

import json

import pytest
from transcripts_helpers import data, load_json

from turnpress import Failure, load_trace
from turnpress.core.model import Usage
from turnpress.core.providers import prompt_with_breakpoints, to_anthropic, to_openai
from turnpress.core.trace import TraceError
from turnpress.plugins.readers.anthropic_messages import detect, to_openai_messages

REL = "anthropic/run.json"


def test_to_openai_messages():
    raw = load_json(REL)
    out = to_openai_messages(raw["system"], raw["messages"])
    assert out[0] == {"role": "system", "content": "You are a data agent. Use the tools."}
    assert out[2] == {"role": "assistant", "content": "I will query both tables at once.",
                      "tool_calls": [
                          {"id": "toolu_1", "type": "function", "function": {
                              "name": "query",
                              "arguments": '{"sql": "select count(*) from orders"}'}},
                          {"id": "toolu_2", "type": "function", "function": {
                              "name": "query",
                              "arguments": '{"sql": "select * from shipments limit 1"}'}}]}
    assert out[3:6] == [
        {"role": "tool", "tool_call_id": "toolu_1", "content": "1042"},
        {"role": "tool", "tool_call_id": "toolu_2",
         "content": "error: table shipments does not exist"},
        {"role": "user", "content": "Hint: the table is called shipping."}]
    assert out[6]["content"] is None and len(out[6]["tool_calls"]) == 1
    assert out[-1] == {"role": "assistant", "content": "Monday 140, Tuesday 151, Wednesday 149."}


def test_mapping_is_error_and_usage():
    trace = load_trace(data(REL))
    assert trace.source == "anthropic-messages"
    assert trace.system_prompt.startswith("You are a data agent")
    assert set(trace.tools) == {"query", "plot"} and trace.tools["plot"].params == {
        "series": "list"}
    first = trace.turns[0]
    assert first.result == Failure("tool_error", "error: table shipments does not exist")
    assert first.prints == ("Hint: the table is called shipping.",)
    assert [c.args for c in first.tool_calls] == [({"sql": "select count(*) from orders"},),
                                                  ({"sql": "select * from shipments limit 1"},)]
    # prompt_tokens = input + cache read + cache write
    assert [t.usage for t in trace.turns] == [Usage(1540, 0, 1500), Usage(1710, 1500, 90),
                                              Usage(1720, 1590, 70)]


def test_anthropic_shape_of_each_prompt_is_the_original_blocks():
    """--format anthropic gives back the run's own blocks: is_error and a one-text-block
    tool_result content as given (ux-b item 8)."""
    raw = load_json(REL)
    original = json.loads(json.dumps(raw["messages"]))
    for m in original:
        m.pop("usage", None)
    trace = load_trace(data(REL))
    starts = [i for i, m in enumerate(original) if m["role"] == "assistant"]
    for n, end in enumerate(starts, 1):
        system, messages = to_anthropic(trace.prompt(n, "full-history"))
        assert system == raw["system"]
        assert messages == original[:end]


def test_openai_shape_is_the_conversion_prefix():
    raw = load_json(REL)
    converted = to_openai_messages(raw["system"], raw["messages"])
    trace = load_trace(data(REL))
    starts = [i for i, m in enumerate(converted) if m["role"] == "assistant"]
    for n, end in enumerate(starts, 1):
        assert to_openai(trace.prompt(n, "full-history")) == converted[:end]


def test_breakpoints_mark_transcript_blocks():
    trace = load_trace(data(REL))
    messages, _ = prompt_with_breakpoints(trace, 3, "full-history")
    system, out = to_anthropic(messages, [(0, None), (len(messages) - 1, None)])
    assert system[0]["cache_control"] == {"type": "ephemeral"}
    assert out[-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert out[-1]["content"][-1]["type"] == "tool_result"


def test_no_usage_and_system_blocks():
    trace = load_trace(data("anthropic/no_usage.json"))
    assert trace.system_prompt == "Be brief." and trace.mission == "List the files."
    assert all(t.usage is None for t in trace.turns)
    assert trace.turns[0].tool_calls[0].args == ({},)


@pytest.mark.parametrize("value, expected", [
    ({"system": "s", "messages": []}, True),
    ({"messages": [{"role": "user", "content": [{"type": "tool_result"}]}]}, True),
    ({"messages": [{"role": "user", "content": "x"}]}, False),
    ({"system": "s", "messages": [{"role": "tool", "content": "x"}]}, False),
    # a system message inside "messages": OpenAI's, unless the rest says Anthropic
    ({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "x"}]},
     False),
    ({"system": "s", "messages": [{"role": "system", "content": "x"}]}, True),
    ({"messages": [{"role": "system", "content": "x"}, {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t", "content": "r"}]}]}, True)])
def test_detect(value, expected):
    assert detect(value, None) is expected


@pytest.mark.parametrize("messages, problem", [
    ([{"role": "system", "content": "x"}], "messages: message 0: unknown role 'system'"),
    ([{"role": "assistant", "content": [{"type": "search_result", "text": "hm"}]}],
     "messages: message 0: content block 0 is 'search_result', which belongs in a user "
     "message"),
    ([{"role": "assistant", "content": [{"type": "thinking", "signature": "s"}]}],
     "messages: message 0: content block 0 (thinking) needs a string \"thinking\""),
    ([{"role": "user", "content": 5}], "messages: message 0: \"content\" must be"),
    ("x", "messages: \"messages\" must be a list")])
def test_bad_input(messages, problem):
    with pytest.raises(TraceError) as info:
        to_openai_messages("", messages)
    assert str(info.value).startswith(problem)


def test_images_round_trip():
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "iVBOR"}}
    converted = to_openai_messages("", [{"role": "user", "content": [
        {"type": "text", "text": "what is this?"}, block]}])
    assert converted == [{"role": "user", "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}}]}]
    _, back = to_anthropic(converted)
    assert back == [{"role": "user", "content": [{"type": "text", "text": "what is this?"},
                                                 block]}]


def test_system_prompt_of_several_blocks_comes_back_as_those_blocks():
    """A system prompt given as several text blocks (a stable one, then one that changes)
    comes back as those blocks, not joined into one; turnpress's own breakpoint goes on
    the last (the request's own cache_control markers are not kept: see the module)."""
    from turnpress import compress

    system = [{"type": "text", "text": "Block one.", "cache_control": {"type": "ephemeral"}},
              {"type": "text", "text": "Block two."}]
    request = {"system": system, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": "r"}]}]}
    for strategy in ("full-history", "price-scheduled", "aggressive"):
        out, _ = compress(request, format="anthropic", strategy=strategy)
        assert [b["text"] for b in out] == ["Block one.", "Block two."], strategy
        assert "cache_control" not in out[0]
    out, _ = compress(request, format="anthropic", strategy="full-history")
    assert out[-1]["cache_control"] == {"type": "ephemeral"}
    # the OpenAI shape of the same run holds the system prompt as one text
    trace = load_trace(data(REL))
    assert to_openai(trace.prompt(1, "full-history"))[0]["content"] == trace.system_prompt


def test_a_system_message_inside_an_anthropic_run_is_named(tmp_path):
    """A system-role message among an Anthropic run's messages: the error names that
    message and where the system prompt goes (it was read as OpenAI chat and blamed a
    valid tool_use block of an earlier message)."""
    raw = load_json(REL)
    raw["messages"].insert(3, {"role": "system", "content": "be careful"})
    path = tmp_path / "run.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(TraceError) as info:
        load_trace(path)
    assert str(info.value) == (f"{path}: message 3: unknown role 'system'; an Anthropic "
                               "message's role must be one of user, assistant (the system "
                               "prompt is the top-level \"system\")")
