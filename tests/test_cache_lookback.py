"""Anthropic's cache looks back only 20 content blocks from a breakpoint.

The API checks, from each ``cache_control`` breakpoint, the block boundaries up to about
20 content blocks before it for a prefix it wrote; a prefix written further back than
that from every breakpoint of the new prompt is a miss (``compare.cache.LOOKBACK``).
Blocks are counted as the Anthropic rendering sends them (``compare.counting``): a
string content is one block, a tool call and a tool result one each, a thinking block
one, a content part one.
"""

from __future__ import annotations

from typing import Any

import pytest

from turnpress.compare.cache import LOOKBACK, AnthropicCache, BlockPoint, CacheUsage
from turnpress.compare.counting import PromptCounter, block_count
from turnpress.core.providers import anthropic_breakpoints
from turnpress.core.tokens import TokenCounter, get_tokenizer


def words(n: int, tag: str = "w") -> str:
    """A text of about ``n`` o200k tokens."""
    return "".join(f" {tag}{i}" for i in range(n // 2))


def head() -> list[dict[str, Any]]:
    """A system prompt past the 1024-token minimum and a task."""
    return [{"role": "system", "content": words(1200, "sys")},
            {"role": "user", "content": "Fix the bug."}]


def plain_turns(start: int, count: int) -> list[dict[str, Any]]:
    """``count`` turns of two one-block messages each (an assistant reply, the user's
    feedback): two content blocks a turn."""
    out: list[dict[str, Any]] = []
    for k in range(start, start + count):
        out.append({"role": "assistant", "content": f"step {k}: {words(40, f'a{k}')}"})
        out.append({"role": "user", "content": f"output {k}: {words(40, f'o{k}')}"})
    return out


def messages_of_blocks(start: int, blocks: int) -> list[dict[str, Any]]:
    """Messages of ``blocks`` content blocks in all, one block each, alternating roles
    (so that the next message is an assistant's when ``blocks`` is even)."""
    turns = plain_turns(start, (blocks + 1) // 2)
    return turns[:blocks]


def tool_turns(start: int, count: int, calls: int = 3) -> list[dict[str, Any]]:
    """``count`` turns of an assistant message with text and ``calls`` tool calls
    (``1 + calls`` blocks) and one tool message per call (one block each)."""
    out: list[dict[str, Any]] = []
    for k in range(start, start + count):
        ids = [f"call_{k}_{j}" for j in range(calls)]
        out.append({"role": "assistant", "content": f"step {k}", "tool_calls": [
            {"id": i, "type": "function",
             "function": {"name": "bash", "arguments": f'{{"command": "ls {i}"}}'}}
            for i in ids]})
        out.extend({"role": "tool", "tool_call_id": i, "content": f"{i}: {words(30, i)}"}
                   for i in ids)
    return out


def end(messages: list[dict[str, Any]]) -> tuple[int, None]:
    return (len(messages) - 1, None)


@pytest.fixture
def counting() -> PromptCounter:
    return PromptCounter(get_tokenizer("o200k_base"), "anthropic")


def account(counting: PromptCounter, model: AnthropicCache, messages: list[dict[str, Any]],
            points: list[tuple[int, int | None]]) -> tuple[Any, CacheUsage]:
    prompt, _ = counting.tokenize(messages, anthropic_breakpoints(messages, points))
    assert all(isinstance(p, BlockPoint) for p in prompt.breakpoints)
    return prompt, model.account(prompt)


def first_write(counting: PromptCounter, model: AnthropicCache) -> tuple[list[dict[str, Any]],
                                                                         int]:
    """The first prompt of a run (the system prompt and two turns, marked at the end of
    the system prompt and at its end): the tokens of the prefix it wrote."""
    messages = head() + plain_turns(1, 2)
    prompt, usage = account(counting, model, messages, [(0, None), end(messages)])
    assert usage.cached == 0 and usage.written == prompt.total
    return messages, prompt.total


def system_tokens(counting: PromptCounter) -> int:
    return counting.counter.count(head()[:1])


@pytest.mark.parametrize("back", [1, 2, 19, LOOKBACK])
def test_a_prefix_written_within_20_blocks_of_the_last_breakpoint_is_read(counting, back):
    """Appending ``back`` one-block messages puts the previous prompt's end ``back``
    blocks before the new end mark: read up to 20, a miss at 21 (the old model read it
    however far back it was)."""
    for gap, hit in ((back, True), (LOOKBACK + 1, False)):
        model = AnthropicCache()
        messages, wrote = first_write(counting, model)
        messages = messages + messages_of_blocks(10, gap)
        prompt, usage = account(counting, model, messages, [(0, None), end(messages)])
        cached = wrote if hit else system_tokens(counting)
        assert usage == CacheUsage(cached, prompt.total - cached), (gap, hit)


@pytest.mark.parametrize("back", [LOOKBACK + 1, LOOKBACK + 2, 3 * LOOKBACK])
def test_a_prefix_written_more_than_20_blocks_before_every_breakpoint_is_a_miss(
        counting, back):
    """Breakpoints before the written prefix (the system prompt's) and after it, each
    more than 20 blocks after it: only the system prompt is read, the rest is written
    again; the next prompt reads that new write."""
    model = AnthropicCache()
    messages, wrote = first_write(counting, model)
    middle = messages + messages_of_blocks(10, back)
    messages = middle + messages_of_blocks(40, 10)
    prompt, usage = account(counting, model, messages,
                            [(0, None), end(middle), end(messages)])
    assert usage.cached == system_tokens(counting) < wrote
    assert usage.written == prompt.total - usage.cached
    again = messages + messages_of_blocks(60, 2)
    prompt2, usage2 = account(counting, model, again, [(0, None), end(again)])
    assert usage2 == CacheUsage(prompt.total, prompt2.total - prompt.total)


def test_a_nearer_breakpoint_rescues_a_prefix_written_further_back(counting):
    """30 blocks after the written prefix, the end mark alone misses it; a mark 15
    blocks after it (a prefix no prompt wrote) reads it, and writes from there."""
    runs = {}
    for with_middle in (False, True):
        model = AnthropicCache()
        messages, wrote = first_write(counting, model)
        middle = messages + messages_of_blocks(10, 15)
        messages = middle + messages_of_blocks(30, 15)
        points = [(0, None), end(middle), end(messages)] if with_middle else \
            [(0, None), end(messages)]
        prompt, usage = account(counting, model, messages, points)
        runs[with_middle] = usage
        assert usage.written == prompt.total - usage.cached
    assert runs[False].cached == system_tokens(counting)
    assert runs[True].cached == wrote


def test_a_mark_inside_a_message_counts_the_block_its_cut_makes(counting):
    """A breakpoint at an offset cuts its message's text into two blocks: a coalesced
    view's stable head marked inside a message 19 blocks after the written prefix reads
    it (the block before the cut, which carries the mark, is the 20th); one block more
    misses."""
    for gap, hit in ((19, True), (20, False)):
        model = AnthropicCache()
        messages, wrote = first_write(counting, model)
        messages = messages + messages_of_blocks(10, gap)
        text = "stable view head " + words(200, "v") + "\nchanging tail"
        messages.append({"role": "assistant" if gap % 2 == 0 else "user", "content": text})
        cut = len("stable view head " + words(200, "v"))
        _, usage = account(counting, model, messages, [(0, None), (len(messages) - 1, cut)])
        assert usage.cached == (wrote if hit else system_tokens(counting)), (gap, hit)


def test_messages_of_several_blocks_count_as_several(counting):
    """Three tool-calling turns are 12 messages but 21 blocks (text + 3 tool_use, then 3
    tool_result, a turn): the prefix written before them is a miss, where 12 one-block
    messages are read. Thinking blocks and content parts count one each too."""
    usages = {}
    for kind in ("plain", "tools", "parts"):
        model = AnthropicCache()
        messages, wrote = first_write(counting, model)
        if kind == "plain":
            new = messages_of_blocks(10, 12)
        elif kind == "tools":
            new = tool_turns(10, 3)
            assert len(new) == 12 and sum(map(block_count, new)) == 21
        else:  # 7 messages: 3 blocks each (thinking, 2 text parts / 3 parts)
            new = []
            for k in range(7):
                if k % 2 == 0:
                    new.append({"role": "assistant", "content": f"reply {k}",
                                "thinking_blocks": [{"type": "thinking", "thinking": "hm",
                                                     "signature": "s"}] * 2})
                else:
                    new.append({"role": "user", "content": [
                        {"type": "text", "text": f"part {k} {j}"} for j in range(3)]})
            assert sum(map(block_count, new)) == 21
        messages = messages + new
        _, usage = account(counting, model, messages, [(0, None), end(messages)])
        usages[kind] = usage.cached
    assert usages["plain"] == wrote
    assert usages["tools"] == usages["parts"] == system_tokens(counting)


def test_without_counted_blocks_each_message_is_one_block():
    """A prompt counted by a bare TokenCounter (no block counts) is taken as one block a
    message, a cut at an offset one more."""
    counter = TokenCounter("o200k_base")
    for gap, hit in ((LOOKBACK, True), (LOOKBACK + 1, False)):
        model = AnthropicCache()
        messages = head() + plain_turns(1, 2)
        model.account(counter.tokenize(messages, [(0, None), end(messages)]))
        wrote = counter.count(messages)
        messages = messages + messages_of_blocks(10, gap)
        usage = model.account(counter.tokenize(messages, [(0, None), end(messages)]))
        assert usage.cached == (wrote if hit else counter.count(head()[:1]))
