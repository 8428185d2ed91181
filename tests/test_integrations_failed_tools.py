"""A failed tool result in a framework integration (LangChain ``status="error"``,
pydantic-ai's retry parts, the Agents SDK's error outputs): its turn is a failed one for
the strategy, and the messages are otherwise compressed as ``compress()`` compresses
them. They used to go through the Anthropic shape for the error flag, which merged
consecutive messages of one role (a recap glued to the next, the user's newest words
glued to the view) and refused a system or developer message after the first turn."""

from __future__ import annotations

import dataclasses
import json

import pytest

from turnpress.core.compression import strategy_names
from turnpress.integrations._common import compress_chat


def _run(turns: int = 12, *, error_at: int = 3) -> list[dict]:
    messages = [{"role": "system", "content": "Audit the repository."},
                {"role": "user", "content": "Find the largest constant."}]
    for i in range(turns):
        messages.append({"role": "assistant", "content": f"Reading file {i}.", "tool_calls": [
            {"id": f"c{i}", "type": "function",
             "function": {"name": "read", "arguments": json.dumps({"path": f"f{i}.py"})}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}",
                         "content": "Error: no such file" if i == error_at
                         else f"LIMIT_{i} = {i}\n" * 30})
    return messages


def test_recaps_stay_one_message_each():
    messages = _run()
    plain = compress_chat(messages, strategy="progressive-batch", cache="openai")
    flagged = compress_chat(messages, failed={"c3"}, strategy="progressive-batch",
                            cache="openai")
    assert [m["role"] for m in flagged] == [m["role"] for m in plain]
    recaps = [m["content"] for m in flagged if str(m.get("content")).startswith("recap -")]
    assert len(recaps) == 8 and all(r.count("recap -") == 1 for r in recaps)
    assert recaps[3].startswith("recap - turn 4 failed: Error: no such file")
    assert "recap - turn 4 failed" not in json.dumps(plain)  # the flag is what failed it


@pytest.mark.parametrize("role", ["system", "developer"])
def test_a_system_message_after_the_first_turn_is_read(role):
    messages = _run(4)
    messages.insert(6, {"role": role, "content": "Budget: two more calls."})
    for strategy in strategy_names():
        sent = compress_chat(messages, failed={"c3"}, strategy=strategy, cache="openai")
        assert "Budget: two more calls." in json.dumps(sent), strategy
    sent = compress_chat(messages, failed={"c3"}, strategy="full-history", cache="openai")
    assert sent == messages


def test_the_users_newest_words_stay_their_own_message():
    messages = [*_run(), {"role": "assistant", "content": "Done?"},
                {"role": "user", "content": "No, go on.", "name": "bob"}]
    for strategy in ("single-user-coalesced", "aggressive", "price-scheduled"):
        sent = compress_chat(messages, failed={"c3"}, strategy=strategy, cache="openai")
        assert sent[-1] == {"role": "user", "content": "No, go on.", "name": "bob"}, strategy
        assert "No, go on." not in json.dumps(sent[:-1])


def _langchain_run(turns: int, error: str) -> list:
    """A LangChain run: a system prompt, the task, then ``turns`` tool-calling turns, the
    third one's ToolMessage failed (``status="error"``, content ``error``)."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    messages = [SystemMessage("Audit."), HumanMessage("Find it.")]
    for i in range(turns):
        messages += [AIMessage(f"Reading {i}.", tool_calls=[
                         {"name": "read", "args": {"path": f"f{i}"}, "id": f"c{i}"}]),
                     ToolMessage(error if i == 2 else "x\n" * 40, tool_call_id=f"c{i}",
                                 status="error" if i == 2 else "success")]
    return messages


def test_langchain_keeps_the_callers_newest_message():
    pytest.importorskip("langchain_core")
    from langchain_core.messages import HumanMessage

    from turnpress.integrations.langchain import compress_messages

    messages = _langchain_run(6, "Error: no such file")
    messages.append(HumanMessage("Check /var too.", id="newest"))
    sent = compress_messages(messages, strategy="single-user-coalesced")
    assert [m.type for m in sent] == ["system", "human", "human"]
    assert sent[-1].id == "newest" and sent[-1].content == "Check /var too."


def test_the_agents_sdk_filter_takes_a_developer_message_after_an_error():
    pytest.importorskip("agents")
    from agents.run_config import CallModelData, ModelInputData

    from turnpress.integrations.openai_agents import TurnpressFilter

    items = [{"role": "user", "content": "Count the files."},
             {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c1",
              "output": "An error occurred while running the tool. Error: denied"},
             {"role": "developer", "content": "Be brief from now on."},
             {"role": "user", "content": "Try /tmp."}]
    data = CallModelData(model_data=ModelInputData(input=items, instructions="Count."),
                         agent=None, context=None)
    for strategy in ("full-history", "single-user-coalesced", "observation-masking"):
        out = TurnpressFilter(strategy)(data)
        assert {"role": "developer", "content": "Be brief from now on."} in out.input \
            or "Be brief from now on." in json.dumps(out.input), strategy
        assert out.input[-1] == {"role": "user", "content": "Try /tmp."}


def _tool_retry(tool: str, text: str, call_id: str):
    """A pydantic-ai tool retry: 2's ``ToolReturnPart(outcome="retried")``, else 1's
    ``RetryPromptPart``."""
    from pydantic_ai.messages import RetryPromptPart, ToolReturnPart

    if "outcome" in {f.name for f in dataclasses.fields(ToolReturnPart)}:
        return ToolReturnPart(tool, text, tool_call_id=call_id, outcome="retried")
    return RetryPromptPart(text, tool_name=tool, tool_call_id=call_id)


class _Context:
    """The part of pydantic-ai's ``RunContext`` a history processor reads."""

    run_id = "r1"
    model = None


def test_pydantic_ai_recaps_after_a_retry_are_one_response_each():
    pytest.importorskip("pydantic_ai")
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    from turnpress.integrations.pydantic_ai import TurnpressHistory

    history = [ModelRequest(parts=[SystemPromptPart("Audit."), UserPromptPart("Find it.")])]
    for i in range(10):
        history.append(ModelResponse(parts=[TextPart(f"Reading {i}."), ToolCallPart(
            "read", {"path": f"f{i}"}, tool_call_id=f"c{i}")]))
        part = (_tool_retry("read", "no such file", f"c{i}") if i == 2
                else ToolReturnPart("read", "x\n" * 40, tool_call_id=f"c{i}"))
        history.append(ModelRequest(parts=[part]))
    sent = TurnpressHistory("progressive-batch")(_Context(), history)
    texts = [p.content for m in sent if isinstance(m, ModelResponse) for p in m.parts
             if isinstance(p, TextPart)]
    recaps = [t for t in texts if t.startswith("recap -")]
    assert len(recaps) == 4 and all(t.count("recap -") == 1 for t in recaps)
    assert recaps[2].startswith("recap - turn 3 failed")


def test_the_compressor_takes_the_flag_as_compress_with_errors_does():
    from turnpress.compress import Compressor, compress_with_errors

    messages = _run()
    for strategy in ("progressive-batch", "single-user-coalesced", "price-scheduled"):
        compressor = Compressor(strategy)
        for message in messages:
            compressor.add(message, failed=message.get("tool_call_id") == "c3")
        assert compressor.messages() == compress_with_errors(messages, {"c3"},
                                                             strategy=strategy), strategy
    with pytest.raises(ValueError, match="is_error"):
        Compressor(format="anthropic").add({"role": "user", "content": "Hi."}, failed=True)


def test_langchains_compressor_reads_a_failed_tool_message_as_compress_messages_does():
    pytest.importorskip("langchain_core")

    from turnpress.integrations.langchain import LangChainCompressor, compress_messages

    messages = _langchain_run(10, "no such file")
    compressor = LangChainCompressor("progressive-batch")
    compressor.extend(messages)
    sent = compressor.messages()
    assert [m.content for m in sent] == [
        m.content for m in compress_messages(messages, strategy="progressive-batch")]
    assert any(str(m.content).startswith("recap - turn 3 failed") for m in sent)
