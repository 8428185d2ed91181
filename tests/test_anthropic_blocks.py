"""Anthropic input with the content blocks the Messages API takes beyond text and tool
calls (QA item 4): images, documents and search results in a ``tool_result`` (computer
use, screenshots), documents in a user message, server and MCP tool blocks in an
assistant message.

``full-history`` gives the input back as it was (less turnpress's own ``cache_control``
markers); every built-in strategy renders such a run, the latest turn's blocks kept
where the strategy keeps that turn's messages; a block turnpress cannot carry is one
error naming the message, the block and what to do.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from turnpress import Compressor, StrategyNotApplicable, compress
from turnpress.core.compression import strategy_names

SYSTEM = "You operate a computer. Use the tools."
PNG = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}


def image(data: str = "iVBORw0KGgo=") -> dict[str, Any]:
    return {"type": "image", "source": {**PNG, "data": data}}


def screenshot_run(turns: int = 3) -> list[dict[str, Any]]:
    """A computer-use run: each turn takes a screenshot, the tool answers with a long
    text (the screen's accessibility tree, long enough for a strategy to mask it) and an
    image."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Open the settings page."}]
    for k in range(1, turns + 1):
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Step {k}: looking at the screen."},
            {"type": "tool_use", "id": f"toolu_{k}", "name": "computer",
             "input": {"action": "screenshot"}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": [
                {"type": "text", "text": f"screenshot {k}\n" + "button OK\n" * 400},
                image(f"PNG{k}")]}]})
    return messages


def without_marks(value: Any) -> Any:
    """``value`` without ``cache_control`` keys, each string content as one text block."""
    if isinstance(value, dict):
        out = {k: without_marks(v) for k, v in value.items() if k != "cache_control"}
        if isinstance(out.get("content"), str) and out.get("role"):
            out["content"] = [{"type": "text", "text": out["content"]}]
        return out
    if isinstance(value, list):
        return [without_marks(v) for v in value]
    return value


def system_text(system: Any) -> str:
    return system if isinstance(system, str) else "".join(b["text"] for b in system)


def full_history(messages: list[dict[str, Any]]) -> tuple[Any, list[dict[str, Any]]]:
    return compress({"system": SYSTEM, "messages": copy.deepcopy(messages)},
                    strategy="full-history", format="anthropic")


def blocks_of(messages: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """Every block of type ``kind``, nested ones (a tool_result's content) included."""
    found = []
    for m in messages:
        for block in m["content"] if isinstance(m["content"], list) else ():
            if block.get("type") == kind:
                found.append(block)
            inner = block.get("content")
            found.extend(b for b in inner if isinstance(b, dict) and b.get("type") == kind
                         ) if isinstance(inner, list) else ()
    return found


def each_strategy(messages: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """``compress()`` of ``messages`` by every built-in strategy that renders transcripts
    (the Compressor gives the same)."""
    outputs = {}
    for name in strategy_names():
        try:
            system, out = compress({"system": SYSTEM, "messages": copy.deepcopy(messages)},
                                   strategy=name, format="anthropic")
        except StrategyNotApplicable:
            continue
        compressor = Compressor(name, format="anthropic", system=SYSTEM)
        compressor.extend(copy.deepcopy(messages))
        assert compressor.messages() == (system, out), name
        outputs[name] = out
    return outputs


def answered(out: list[dict[str, Any]]) -> None:
    """Every tool_use of ``out`` is answered by a tool_result in the next message."""
    for k, m in enumerate(out):
        uses = [b["id"] for b in blocks_of([m], "tool_use")] if m["role"] == "assistant" else []
        if uses:
            results = {b["tool_use_id"] for b in blocks_of([out[k + 1]], "tool_result")}
            assert set(uses) <= results


# -- tool_result content: text, image, document, search_result ------------------------------


def test_tool_result_blocks_round_trip_under_full_history() -> None:
    run = [*screenshot_run(), {"role": "assistant", "content": "Done."}]
    run[-2]["content"][0]["content"].extend([
        {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                        "data": "log"}, "title": "log.txt"},
        {"type": "search_result", "source": "https://example.com/a", "title": "A",
         "content": [{"type": "text", "text": "found it"}], "citations": {"enabled": True}}])
    system, out = full_history(run)
    assert system_text(system) == SYSTEM
    assert without_marks(out) == without_marks(run)


def test_latest_screenshot_is_kept_and_old_ones_become_markers() -> None:
    outputs = each_strategy(screenshot_run(12))
    assert "full-history" in outputs and "rolling-window" in outputs
    for name, out in outputs.items():
        answered(out)
        last = [r for r in blocks_of(out, "tool_result") if r["tool_use_id"] == "toolu_12"]
        if last:  # the strategy sends the latest tool result as a tool_result: whole
            assert image("PNG12") in last[0]["content"], name
    window = outputs["rolling-window"]  # the last two turns as sent, the rest coalesced
    assert [b["source"]["data"] for b in blocks_of(window, "image")] == ["PNG11", "PNG12"]
    assert "[image]" in str(window[0]["content"])


def test_tool_result_block_the_api_does_not_take_is_one_clear_error() -> None:
    run = screenshot_run(1)
    run[-1]["content"][0]["content"].append({"type": "tool_use", "id": "x", "name": "n",
                                             "input": {}})
    with pytest.raises(ValueError) as info:
        full_history(run)
    text = str(info.value)
    assert text.startswith("messages: message 2: ")
    assert "'tool_use'" in text and "tool_result" in text and "OpenAI" not in text


# -- user messages: document, search_result, container_upload, a file image ----------------

PDF = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                      "data": "JVBERi0xLjQ="},
       "title": "report.pdf", "citations": {"enabled": True}}


def test_user_blocks_round_trip_under_full_history() -> None:
    run = [
        {"role": "user", "content": [
            PDF, {"type": "text", "text": "Summarize the report.", "cache_control": {
                "type": "ephemeral"}}]},
        {"role": "assistant", "content": "It is about sales."},
        {"role": "user", "content": [
            {"type": "search_result", "source": "https://example.com", "title": "Ex",
             "content": [{"type": "text", "text": "sales rose"}]},
            {"type": "container_upload", "file_id": "file_1"},
            {"type": "image", "source": {"type": "file", "file_id": "file_2"}},
            {"type": "text", "text": "And these?"}]},
        {"role": "assistant", "content": "They agree."}]
    _, out = full_history(run)
    assert without_marks(out) == without_marks(run)


def test_newest_user_document_is_sent_as_sent_by_every_strategy() -> None:
    run = screenshot_run(12)
    run[-1]["content"].extend([PDF, {"type": "text", "text": "Compare with this report."}])
    for name, out in each_strategy(run).items():
        answered(out)
        assert PDF in blocks_of(out, "document"), name


@pytest.mark.parametrize(("block", "expected"), [
    ({"type": "tool_use", "id": "t", "name": "n", "input": {}},
     "messages: message 0: content block 1 is 'tool_use', which belongs in an assistant "
     "message"),
    ({"type": "bogus"},
     "messages: message 0: content block 1 is 'bogus', which turnpress cannot carry: a user "
     "message holds text, image, document, search_result, container_upload and tool_result "
     "blocks"),
    ({"type": "image", "source": "x"}, "messages: message 0: content block 1 (image) needs a "
                                       "\"source\" object")])
def test_user_block_turnpress_cannot_carry_is_one_clear_error(block: dict[str, Any],
                                                              expected: str) -> None:
    run = [{"role": "user", "content": [{"type": "text", "text": "go"}, block]},
           {"role": "assistant", "content": "ok"}]
    with pytest.raises(ValueError) as info:
        full_history(run)
    assert str(info.value).startswith(expected)
    assert "OpenAI" not in str(info.value)


# -- assistant messages: server tools (web search...), MCP ----------------------------------


def searched(k: int, *, call: bool = True) -> dict[str, Any]:
    """An assistant reply that searched the web on Anthropic's side (server_tool_use and its
    web_search_tool_result), answered with a cited text, and (``call``) called a tool."""
    content: list[dict[str, Any]] = [
        {"type": "server_tool_use", "id": f"srvtoolu_{k}", "name": "web_search",
         "input": {"query": f"question {k}"}},
        {"type": "web_search_tool_result", "tool_use_id": f"srvtoolu_{k}", "content": [
            {"type": "web_search_result", "url": f"https://example.com/{k}", "title": "Ex",
             "encrypted_content": "EqgfCioIARgBIiQ", "page_age": None}]},
        {"type": "text", "text": f"Found answer {k}.", "citations": [
            {"type": "web_search_result_location", "url": f"https://example.com/{k}",
             "title": "Ex", "encrypted_index": "Eo8BCioIAhgBIiQ", "cited_text": "answer"}]}]
    if call:
        content.append({"type": "tool_use", "id": f"toolu_{k}", "name": "save",
                        "input": {"note": f"answer {k}"}})
    return {"role": "assistant", "content": content}


def search_run(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Collect the news."}]
    for k in range(1, turns + 1):
        messages.append(searched(k))
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{k}",
             "content": f"saved {k}\n" + "ok\n" * 400}]})
    return messages


MCP = {"role": "assistant", "content": [
    {"type": "thinking", "thinking": "Ask the MCP server.", "signature": "sig"},
    {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "echo", "server_name": "ex",
     "input": {"text": "hi"}},
    {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1", "is_error": False,
     "content": [{"type": "text", "text": "hi"}]},
    {"type": "text", "text": "The server said hi."}]}


def test_server_and_mcp_blocks_round_trip_under_full_history() -> None:
    run = [{"role": "user", "content": "news?"}, searched(1, call=False),
           {"role": "user", "content": "and MCP?"}, MCP,
           {"role": "user", "content": "thanks"}, searched(2),
           {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2",
                                         "content": "saved"}]},
           {"role": "assistant", "content": "Done."}]
    _, out = full_history(run)
    assert without_marks(out) == without_marks(run)


def test_latest_server_blocks_are_kept_by_every_strategy() -> None:
    for name, out in each_strategy(search_run(12)).items():
        answered(out)
        for m in out:
            uses = {b["id"] for b in blocks_of([m], "server_tool_use")}
            results = {b["tool_use_id"] for b in blocks_of([m], "web_search_tool_result")}
            assert uses == results, name  # a search goes with its result, or neither goes
            if "toolu_12" in {b["id"] for b in blocks_of([m], "tool_use")}:
                assert uses == {"srvtoolu_12"}, name


@pytest.mark.parametrize(("block", "expected"), [
    ({"type": "tool_result", "tool_use_id": "t", "content": "x"},
     "messages: message 1: content block 0 is 'tool_result', which belongs in a user message"),
    ({"type": "compaction", "content": "summary"},
     "messages: message 1: content block 0 is 'compaction', which turnpress cannot carry: an "
     "assistant message holds text, thinking, redacted_thinking, tool_use and server tool "
     "blocks (server_tool_use, web_search_tool_result, mcp_tool_use...); send what it says "
     "as a text block"),
    ({"type": "server_tool_use", "id": "s", "name": "web_search", "input": []},
     "messages: message 1: content block 0 (server_tool_use) needs a string \"id\", a string "
     "\"name\" and an object \"input\"")])
def test_assistant_block_turnpress_cannot_carry_is_one_clear_error(block: dict[str, Any],
                                                                   expected: str) -> None:
    run = [{"role": "user", "content": "go"}, {"role": "assistant", "content": [block]}]
    with pytest.raises(ValueError) as info:
        full_history(run)
    assert str(info.value).startswith(expected)


@pytest.mark.parametrize(("block", "expected"), [
    ({"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text"}]},
     "messages: message 2: content block 0 (tool_result): its content block 0 (text) needs a "
     "string \"text\""),
    ({"type": "tool_result", "content": "x"},
     "messages: message 2: content block 0 (tool_result) needs a string \"tool_use_id\"")])
def test_malformed_tool_result_names_the_block(block: dict[str, Any], expected: str) -> None:
    run = screenshot_run(1)
    run[-1]["content"] = [block]
    with pytest.raises(ValueError) as info:
        full_history(run)
    assert str(info.value).startswith(expected)


IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": "iVBOR"}}


@pytest.mark.parametrize("strategy", ["single-user-coalesced", "checkpoint-coalesced",
                                      "price-scheduled"])
def test_a_view_with_an_image_mission_marks_the_mission_as_its_breakpoint_says(strategy):
    """A coalesced view whose mission holds an image: its breakpoint after the mission
    cuts the view's first text block there (the cache reads the mission on every call);
    the whole view was marked on its last block, the image, so a view rebuilt after
    the mission wrote the mission again. The compare cost model counts these marks."""
    from turnpress import get_strategy
    from turnpress.compare.counting import PromptCounter
    from turnpress.core.compression import RenderContext, render_with_breakpoints
    from turnpress.core.providers import anthropic_breakpoints, to_anthropic
    from turnpress.core.tokens import get_tokenizer
    from turnpress.plugins.readers._messages_to_trace import build_trace
    from turnpress.plugins.readers.anthropic_messages import message_entries

    mission = "What is in this picture? Describe it."
    messages: list[dict[str, Any]] = [{"role": "user", "content": [
        {"type": "text", "text": mission}, IMAGE]}]
    for k in range(1, 40):
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{k}", "name": "look", "input": {"part": k}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{k}", "content": f"part {k}\n" * 30}]})
    trace = build_trace(message_entries("Be brief.", messages, "messages"), where="m",
                        source="anthropic-messages")
    counter = PromptCounter(get_tokenizer("chars4"), "anthropic")
    views = 0
    for n in range(1, len(trace.turns) + 2):
        args = trace.prompt_arguments(n)
        args["memory"] = {}
        prompt, points = render_with_breakpoints(**args, compression=strategy)
        marks = anthropic_breakpoints(prompt, points)
        ctx = RenderContext(mission=args["mission"], system_prompt=args["system_prompt"],
                            tools=args["tools"], data=args["data"],
                            turns_left=args["turns_left"], preamble=args["preamble"])
        assert counter.points(get_strategy(strategy), prompt, args["turns"], {},
                              ctx) == marks  # the cost model counts what is sent
        cut = [i for i, offset in marks if offset is not None
               and isinstance(prompt[i]["content"], list)]
        if not cut:
            continue
        views += 1
        _, sent = to_anthropic(prompt, points)
        blocks = sent[cut[0] - 1]["content"]  # the system prompt is apart
        assert blocks[0]["text"] == f"{mission}\n[image]" and "cache_control" in blocks[0]
        image = {k: v for k, v in blocks[-1].items() if k != "cache_control"}
        assert image == IMAGE  # the image itself, after the view's text
    assert views


def test_an_offset_past_the_first_text_part_marks_the_whole_message() -> None:
    from turnpress.core.providers import anthropic_breakpoints, to_anthropic

    message = {"role": "user", "content": [{"type": "text", "text": "abc"},
                                           {"type": "image_url",
                                            "image_url": {"url": "data:image/png;base64,iV"}}]}
    assert anthropic_breakpoints([message], [(0, 2)]) == [(0, 2)]
    assert anthropic_breakpoints([message], [(0, 3)]) == [(0, None)]
    _, sent = to_anthropic([message], [(0, 2)])
    assert [b.get("text") for b in sent[0]["content"]] == ["ab", "c", None]
    assert "cache_control" in sent[0]["content"][0]
    _, sent = to_anthropic([message], [(0, 5)])
    assert "cache_control" in sent[0]["content"][-1]
