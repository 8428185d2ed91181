"""``trim-messages``: LangChain's ``trim_messages(strategy="last")`` as a strategy, offline
(issue 19 item 4), checked against LangChain's own function when it is installed."""

from __future__ import annotations

import pytest

from turnpress import compress, get_strategy
from turnpress.plugins.trim_messages import TrimMessages

NAME = "trim-messages"


def _transcript(turns: int = 6) -> list[dict]:
    messages = [{"role": "system", "content": "You audit files."},
                {"role": "user", "content": "Read every file and report the largest."}]
    for k in range(turns):
        messages.append({"role": "assistant", "content": f"Reading part {k}.", "tool_calls": [
            {"id": f"c{k}", "type": "function",
             "function": {"name": "read", "arguments": f'{{"part": {k}}}'}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{k}", "content": f"{k}" * 200})
        if k == 3:
            messages.append({"role": "user", "content": "Also check part 9."})
    return messages


def _size(messages: list[dict]) -> int:
    strategy = TrimMessages()

    class Ctx:  # the registry is all tokens() needs
        from turnpress.core.registry import get_registry
        registry = get_registry()
    return sum(strategy.tokens(Ctx, m) for m in messages)


def test_within_max_tokens_it_is_full_history():
    messages = _transcript()
    assert compress(messages, strategy=f"{NAME}:max_tokens=100000") == messages


def test_past_max_tokens_system_and_the_newest_messages_from_a_user_message():
    messages = _transcript()
    out = compress(messages, strategy=f"{NAME}:max_tokens=400")
    assert out[0] == messages[0]
    assert out[1] == {"role": "user", "content": "Also check part 9."}
    assert out[1:] == messages[messages.index(out[1]):]
    assert _size(out) <= 400
    ai = compress(messages, strategy=f"{NAME}:max_tokens=200,start_on=ai")
    assert ai[1]["role"] == "assistant" and _size(ai) <= 200
    assert ai[1:] == messages[-(len(ai) - 1):]  # a tail of the run
    bare = compress(messages, strategy=f"{NAME}:max_tokens=200,include_system=false")
    assert bare[0] == {"role": "user", "content": "Also check part 9."}  # no system
    assert _size(bare) <= 200


def test_options_are_checked():
    with pytest.raises(ValueError, match="'start_on' must be one of"):
        get_strategy(f"{NAME}:start_on=tool")
    with pytest.raises(ValueError, match="'max_tokens' must be an integer >= 1"):
        get_strategy(f"{NAME}:max_tokens=0")


@pytest.mark.parametrize(("max_tokens", "start_on"), [
    (400, "human"), (200, "ai"), (700, "human"), (90, "human"), (5000, "human")])
def test_equal_to_langchains_trim_messages(max_tokens, start_on):
    pytest.importorskip("langchain_core")
    from langchain_core.messages import trim_messages

    from turnpress.integrations.langchain import from_openai, to_openai

    def count(messages):
        return _size(to_openai(messages))

    messages = _transcript()
    for end in range(3, len(messages) + 1):
        request = messages[:end]
        if request[-1]["role"] == "assistant":
            continue
        theirs = trim_messages(from_openai(request), max_tokens=max_tokens, strategy="last",
                               token_counter=count, include_system=True, start_on=start_on,
                               allow_partial=False)
        ours = compress(request, strategy=f"{NAME}:max_tokens={max_tokens},"
                                          f"start_on={'ai' if start_on == 'ai' else 'human'}")
        assert to_openai(from_openai(ours)) == to_openai(theirs), end
