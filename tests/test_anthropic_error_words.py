"""Errors about Anthropic input speak Anthropic (QA item 14): tool_use and tool_result
blocks, tool_use_id, the content block index, and ``Compressor(system=...)`` for the
system prompt; never OpenAI's tool_calls, tool messages or tool_call_id."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from turnpress import Compressor, compress
from turnpress.cli import main

OPENAI_WORDS = ("tool_calls", "tool message", "tool_call_id", "OpenAI")


def use(*ids: str, text: str = "Let me look.") -> dict[str, Any]:
    return {"role": "assistant", "content": [
        {"type": "text", "text": text},
        *({"type": "tool_use", "id": i, "name": "ls", "input": {}} for i in ids)]}


def result(*ids: str) -> dict[str, Any]:
    return {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": i, "content": "a.txt"} for i in ids]}


GO = {"role": "user", "content": "List the files."}


@pytest.mark.parametrize(("messages", "expected"), [
    ([GO, use("a", "t"), result("a"), {"role": "assistant", "content": "Done."}],
     "messages: message 1: content block 2 (tool_use 't') is never answered: no tool_result "
     "with its tool_use_id follows before the next assistant message, and the API refuses "
     "such a list; add its tool_result (its result, or an error with \"is_error\": true)"),
    ([GO, use("a"), result("b")],
     "messages: message 2: content block 0 (tool_result) has no matching tool_use: "
     "tool_use_id 'b' is not the id of a tool_use of the assistant message 1 (its tool_use "
     "ids: 'a')"),
    ([result("a"), use("a")],
     "messages: message 0: content block 0 (tool_result) has no matching tool_use: no "
     "assistant message comes before it"),
    ([GO, use("a"), result("a", "a")],
     "messages: message 2: duplicate answer: content block 1 is a second tool_result for "
     "the tool_use 'a' of the assistant message 1"),
    ([GO, use("a", "a")],
     "messages: message 1: duplicate tool_use id 'a': content blocks 1 and 2 share it; each "
     "tool_use needs its own id, which its tool_result's tool_use_id answers"),
])
def test_pairing_errors_speak_anthropic(messages: list[dict[str, Any]], expected: str) -> None:
    with pytest.raises(ValueError) as info:
        compress({"system": "s", "messages": messages}, format="anthropic")
    assert str(info.value) == expected
    assert not any(word in expected for word in OPENAI_WORDS)
    compressor = Compressor(format="anthropic", system="s")
    with pytest.raises(ValueError) as incremental:
        compressor.extend(messages)
        compressor.messages()
    assert str(incremental.value) == expected


def test_openai_input_keeps_its_words() -> None:
    messages = [GO, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "t", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "assistant", "content": "Done."}]
    with pytest.raises(ValueError, match=r"message 1: tool_calls\[0\] \(id 't'\) is never "
                                         r"answered: no tool message with its tool_call_id"):
        compress(messages)


def test_a_system_message_added_to_an_anthropic_compressor() -> None:
    compressor = Compressor(format="anthropic")
    with pytest.raises(ValueError) as info:
        compressor.add({"role": "system", "content": "You are X."})
    assert str(info.value) == (
        "messages: message 0: unknown role 'system'; an Anthropic message's role must be one "
        "of user, assistant (pass the system prompt as Compressor(system=...))")
    with pytest.raises(ValueError, match=r"\(the system prompt is the top-level \"system\"\)"):
        compress({"messages": [{"role": "system", "content": "x"}]}, format="anthropic")


def test_claude_code_log_speaks_anthropic(tmp_path) -> None:
    lines = [{"type": "system", "subtype": "init", "session_id": "s", "uuid": "i"},
             {"type": "user", "session_id": "s", "message": GO},
             {"type": "assistant", "session_id": "s", "message": {"id": "m", **use("a")}},
             {"type": "user", "session_id": "s", "message": result("b")}]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    output = CliRunner().invoke(main, ["trace", "show", str(path)]).output
    assert "line 4: content block 0 (tool_result) has no matching tool_use" in output
