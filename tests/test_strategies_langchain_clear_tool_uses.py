"""``clear-tool-uses-lc``: LangChain's ``ClearToolUsesEdit`` middleware, offline
(issue 19 item 4): where it differs from Anthropic's edit (``clear-tool-uses``), and,
when LangChain v1 is installed, equal to what the middleware itself sends."""

from __future__ import annotations

import pytest

from turnpress import compress
from turnpress.plugins.langchain_clear_tool_uses import LangChainClearToolUses

NAME = "clear-tool-uses-lc"


def _transcript(sizes: list[int]) -> list[dict]:
    """A run whose k-th tool result is ``sizes[k]`` characters long."""
    messages = [{"role": "system", "content": "You audit files."},
                {"role": "user", "content": "Read every file."}]
    for k, size in enumerate(sizes):
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{k}", "type": "function",
             "function": {"name": "read" if k % 3 else "ls", "arguments": f'{{"n": {k}}}'}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{k}", "content": "x" * size})
    messages.append({"role": "assistant", "content": "done"})
    return messages


def _results(out: list[dict]) -> list[str]:
    return [m["content"] for m in out if m["role"] == "tool"]


def test_defaults_are_langchains():
    assert LangChainClearToolUses.option_defaults() == {
        "trigger": 100_000, "keep": 3, "clear_at_least": 0, "exclude_tools": "",
        "clear_tool_inputs": False, "tokenizer": "chars4"}


def test_a_short_result_is_cleared_too():
    """Anthropic's edit keeps a result shorter than the placeholder; LangChain's does not."""
    messages = _transcript([400, 3, 400, 400])
    anthropic = _results(compress(messages, strategy="clear-tool-uses:trigger=10,keep=1"))
    langchain = _results(compress(messages, strategy=f"{NAME}:trigger=10,keep=1"))
    assert anthropic == ["[cleared]", "xxx", "[cleared]", "x" * 400]
    assert langchain == ["[cleared]", "[cleared]", "[cleared]", "x" * 400]


def test_clear_at_least_is_where_clearing_stops():
    """LangChain clears oldest first until clear_at_least tokens are reclaimed; Anthropic
    applies the whole activation only if it reclaims that much."""
    messages = _transcript([400] * 6)
    spec = "trigger=10,keep=1,clear_at_least=150"
    langchain = _results(compress(messages, strategy=f"{NAME}:{spec}"))
    anthropic = _results(compress(messages, strategy=f"clear-tool-uses:{spec}"))
    assert langchain == ["[cleared]", "[cleared]"] + ["x" * 400] * 4  # 2 x ~98 tokens
    assert anthropic == ["[cleared]"] * 5 + ["x" * 400]
    never = _results(compress(messages, strategy="clear-tool-uses:trigger=10,keep=1,"
                                                  "clear_at_least=100000"))
    assert never == ["x" * 400] * 6


def test_below_trigger_it_is_full_history():
    messages = _transcript([40] * 3)
    assert compress(messages, strategy=f"{NAME}:trigger=100000") == compress(
        messages, strategy="full-history")


@pytest.mark.parametrize("spec", [
    {"trigger": 10, "keep": 1}, {"trigger": 10, "keep": 0, "clear_at_least": 150},
    {"trigger": 10, "keep": 2, "exclude_tools": ["ls"]},
    {"trigger": 10, "keep": 1, "clear_tool_inputs": True}, {"trigger": 5000, "keep": 1}])
def test_equal_to_langchains_own_middleware_edit(spec):
    """What LangChain's ClearToolUsesEdit does to the same request, counted with the
    same token counter, is what this strategy renders."""
    pytest.importorskip("langchain.agents.middleware")
    from langchain.agents.middleware import ClearToolUsesEdit

    from turnpress.integrations.langchain import from_openai, to_openai
    from turnpress.plugins.clear_tool_uses import _counted
    from turnpress.plugins.tokenizers import chars4

    def count(messages):
        return chars4("".join(_counted(m) for m in to_openai(messages)))

    messages = _transcript([400, 3, 900, 120, 400, 800, 60])
    for end in range(4, len(messages)):
        if messages[end - 1]["role"] == "assistant":
            continue  # a request is sent after the tool results
        request = messages[:end]
        edited = from_openai(request)
        ClearToolUsesEdit(**{k: v for k, v in spec.items()}).apply(edited, count_tokens=count)
        options = ",".join(f"{k}={'|'.join(v) if isinstance(v, list) else v}"
                           for k, v in spec.items())
        ours = compress(request, strategy=f"{NAME}:{options}")
        assert to_openai(from_openai(ours)) == to_openai(edited), end
