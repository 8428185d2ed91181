"""The ``openai-responses`` reader and ``compress(format="responses")`` (DESIGN §10, §12;
issue 19 item 2): Responses input items read, replayed exactly and sent back in shape."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transcripts_helpers import data, load_json

from turnpress import Compressor, compress
from turnpress.cli import main
from turnpress.core.model import Usage
from turnpress.core.responses import items_to_messages, to_responses
from turnpress.core.trace import TraceError, iter_traces, load_trace
from turnpress.importing import import_transcripts
from turnpress.plugins.readers.openai_responses import detect

REQUEST = "responses/request.json"


def _sent(body):
    """The items as sent: without the ``usage`` a logger added."""
    return [{k: v for k, v in i.items() if k != "usage"} for i in body["input"]]


def _assistant_starts(items):
    """Index of the first item of each assistant output: a reasoning item, an assistant
    message not right after a reasoning item, or a function call after a non-output."""
    starts, previous = [], None
    for k, item in enumerate(items):
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") == "assistant":
            kind = "assistant"
        if (kind == "reasoning" or (kind == "assistant" and previous != "reasoning")
                or (kind == "function_call" and previous not in
                    ("reasoning", "assistant", "function_call"))):
            starts.append(k)
        previous = kind
    return starts


def test_reads_calls_errors_reasoning_compaction_and_usage():
    trace = load_trace(data(REQUEST))
    assert trace.source == "openai-responses"
    assert trace.system_prompt == "You are a data agent. Use the tools."
    assert trace.mission == "How many orders shipped last week, per day?"
    assert set(trace.tools) == {"query"}  # the built-in web_search tool is no function
    first, second, third = trace.turns
    assert [c.args for c in first.tool_calls] == [({"sql": "select count(*) from orders"},),
                                                  ({"sql": "select * from shipments limit 1"},)]
    assert first.tool_calls[0].result == "1042"
    assert not first.success and first.result.reason == "exception"
    assert first.prints == ("Hint: the table is called shipping.",)
    assert first.usage == Usage(1540, 0) and second.usage == Usage(1710, 1536)
    assert third.usage is None  # usage absent
    assert third.program == "Monday 140, Tuesday 151, Wednesday 149."


def test_full_history_replays_each_request_exactly():
    body = load_json(REQUEST)
    sent = _sent(body)
    trace = load_trace(data(REQUEST))
    starts = _assistant_starts(sent)
    assert len(starts) == len(trace.turns)
    for n, start in enumerate(starts, 1):
        instructions, items = to_responses(trace.prompt(n, "full-history"))
        assert instructions == body["instructions"]
        assert items == sent[:start]


@pytest.mark.parametrize("as_body", [True, False])
def test_compress_full_history_is_the_input(as_body):
    body = load_json(REQUEST)
    given = body if as_body else body["input"]
    out = compress(given, strategy="full-history", format="responses")
    if as_body:  # the body's other keys (model, tools) as given, for create(**out)
        assert set(body) == {"instructions", "input", "model", "tools"}
        assert out == {**body, "input": _sent(body)}
    else:
        assert out == _sent(body)


def test_compress_keeps_compaction_and_pairs_calls():
    body = load_json(REQUEST)
    out = compress(body, strategy="rolling-window:window=1", format="responses")
    items = out["input"]
    assert items[0] == body["input"][0]  # the compaction item, whole
    calls = {i["call_id"] for i in items if i.get("type") == "function_call"}
    outputs = {i["call_id"] for i in items if i.get("type") == "function_call_output"}
    assert calls == outputs
    # single-user-coalesced folds everything into one user message; compaction stays
    folded = compress(body, strategy="single-user-coalesced", format="responses")["input"]
    assert folded[0]["type"] == "compaction" and len(folded) == 2
    assert "Hint: the table is called shipping." in folded[1]["content"]


def test_changed_messages_are_converted_and_reasoning_is_kept():
    [(_, message)] = items_to_messages([
        {"type": "reasoning", "id": "rs", "encrypted_content": "x"},
        {"type": "function_call", "call_id": "c", "name": "ls", "arguments": "{}"}], "t")
    changed = {**message, "tool_calls": [{**message["tool_calls"][0],
                                          "function": {"name": "ls", "arguments": "{\"a\":1}"}}]}
    assert to_responses([changed])[1] == [
        {"type": "reasoning", "id": "rs", "encrypted_content": "x"},
        {"type": "function_call", "call_id": "c", "name": "ls", "arguments": "{\"a\":1}"}]
    written = to_responses([{"role": "tool", "tool_call_id": "c", "content": "[cleared]"},
                            {"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    assert written == (None, [{"type": "function_call_output", "call_id": "c",
                               "output": "[cleared]"},
                              {"role": "user", "content": [{"type": "input_text",
                                                            "text": "hi"}]}])


def test_compressor_responses_equals_compress():
    body = load_json(REQUEST)
    c = Compressor("rolling-window:window=1", format="responses")
    for item in body["input"]:
        c.add(item)
    assert c.messages() == compress(body["input"], strategy="rolling-window:window=1",
                                    format="responses")


def test_jsonl_of_item_lists_and_bodies():
    traces = list(iter_traces(data("responses/items.jsonl")))
    assert [t.source for t in traces] == ["openai-responses"] * 2
    assert traces[0].system_prompt == "Answer with tools." and len(traces[0].turns) == 2
    assert traces[1].system_prompt == "Be brief." and traces[1].mission == "What is 2+2?"


@pytest.mark.parametrize(("value", "expected"), [
    ({"input": []}, True),
    ([{"type": "function_call", "call_id": "a", "name": "x"}], True),
    ([{"role": "user", "content": "plain chat"}], False),
    ({"messages": [], "input": []}, False),
])
def test_detect(value, expected):
    assert detect(value) is expected


@pytest.mark.parametrize(("items", "problem"), [
    ([{"role": "user", "content": "m"}, {"type": "function_call", "name": "x"}],
     "item 1: a function_call item needs string \"call_id\" and \"name\""),
    ([{"role": "user", "content": "m"}, {"type": "message", "role": "robot", "content": ""}],
     "item 1: unknown role 'robot'"),
    ([{"role": "user", "content": "m"}, {"type": "function_call_output", "call_id": "z",
                                         "output": "o"},
      {"type": "message", "role": "assistant", "content": "a"}],
     "item 1: tool message with no matching call"),
    ([{"role": "user", "content": "m"}, {"nothing": 1}],
     "item 1: an input item needs a \"type\""),
])
def test_bad_input_is_one_line_with_the_item_index(items, problem, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"input": items}))
    with pytest.raises(TraceError, match=None) as err:
        load_trace(path)
    assert problem in str(err.value) and str(err.value).startswith(f"{path}: ")
    result = CliRunner().invoke(main, ["trace", "show", str(path)])
    assert result.exit_code == 2 and result.output.count("\n") == 1


def test_a_long_bad_value_is_quoted_in_80_characters(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"input": [{"role": "user", "content": "m"},
                                          {"type": "message", "role": "r" * 100_000,
                                           "content": ""}]}))
    result = CliRunner().invoke(main, ["trace", "show", str(path)])
    assert result.exit_code == 2 and len(result.output) < 300


# -- property: random Responses inputs survive import -> save -> load -> full-history ------

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@st.composite
def item_lists(draw):
    items = [{"role": "user", "content": draw(_text)}]
    ids = iter(range(10_000))
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            items.append({"type": "reasoning", "id": f"rs{next(ids)}", "summary": [],
                          "encrypted_content": draw(_text)})
        calls = [f"c{next(ids)}" for _ in range(draw(st.integers(0, 3)))]
        if not calls or draw(st.booleans()):
            items.append({"type": "message", "role": "assistant",
                          "content": [{"type": "output_text", "text": draw(_text)}]})
        for call in calls:
            items.append({"type": "function_call", "call_id": call, "name": "ls",
                          "arguments": json.dumps({"p": draw(_text)})})
        for call in calls:
            items.append({"type": "function_call_output", "call_id": call,
                          "output": draw(_text)})
        if draw(st.booleans()):
            items.append({"type": "message", "role": "user",
                          "content": [{"type": "input_text", "text": draw(_text)}]})
        if draw(st.booleans()):
            items.append({"type": "compaction", "id": f"cmp{next(ids)}",
                          "encrypted_content": draw(_text)})
    return items


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(item_lists())
def test_random_responses_survive_import_save_load_full_history(items):
    directory = Path(tempfile.mkdtemp())
    try:
        source = directory / "in.json"
        source.write_text(json.dumps({"input": items, "instructions": "sys"}))
        out = directory / "out.jsonl"
        import_transcripts([source], out)
        loaded = load_trace(out)
        assert loaded == load_trace(source)
        starts = _assistant_starts(items)
        assert len(starts) == len(loaded.turns)
        for n, start in enumerate(starts, 1):
            assert to_responses(loaded.prompt(n, "full-history")) == ("sys", items[:start])
        assert compress({"input": items, "instructions": "sys"}, strategy="full-history",
                        format="responses") == {"instructions": "sys", "input": items}
    finally:
        shutil.rmtree(directory)


def test_an_images_detail_is_kept_through_a_rewritten_view():
    """QA: ``compress(format="responses")`` read an ``input_image`` as a chat image
    without its ``detail`` and wrote it back without one, so a view the strategy
    rewrote sent ``detail: "high"`` as the API's default (the SDK's type requires the
    field). It is kept both ways."""
    from turnpress import compress

    image = {"type": "input_image", "image_url": "https://x.test/plan.png", "detail": "high"}
    items: list = [{"role": "user", "content": [
        {"type": "input_text", "text": "Read the plan."}, image]}]
    for k in range(4):
        items += [{"type": "function_call", "call_id": f"c{k}", "name": "read",
                   "arguments": "{}"},
                  {"type": "function_call_output", "call_id": f"c{k}", "output": f"part {k}"}]
    for strategy in ("full-history", "single-user-coalesced", "rolling-window"):
        sent = compress(items, strategy=strategy, format="responses")
        images = [p for i in sent if isinstance(i.get("content"), list)
                  for p in i["content"] if p.get("type") == "input_image"]
        assert images == [image], (strategy, images)
