"""Content blocks as the Anthropic rendering sends them (``compare.counting``): a string
content is one block, a tool call and a tool result one each, a thinking block one, a
content part one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from turnpress import load_trace
from turnpress.compare.cache import LOOKBACK
from turnpress.compare.counting import PromptCounter, block_counts
from turnpress.core.compression import strategy_names
from turnpress.core.providers import (
    anthropic_breakpoints,
    prompt_with_breakpoints,
    to_anthropic,
)
from turnpress.core.tokens import get_tokenizer
from turnpress.core.trace import iter_traces
from turnpress.examples import example_trace_paths
from turnpress.plugins.readers import anthropic_messages

DATA = Path(__file__).parent / "data" / "transcripts"


def rendered_blocks(messages: list[Any], points: list[tuple[int, int | None]]
                    ) -> tuple[int, list[int]]:
    """The content blocks of ``to_anthropic``'s request (``system`` and messages), and
    the position (1-based) of each block carrying ``cache_control``."""
    system, out = to_anthropic(messages, points)
    blocks: list[Any] = list(system) if isinstance(system, list) else [system] * bool(system)
    for m in out:
        content = m["content"]
        blocks.extend(content if isinstance(content, list) else [content] * bool(content))
    return len(blocks), [k + 1 for k, b in enumerate(blocks)
                         if isinstance(b, dict) and "cache_control" in b]


def anthropic_run() -> dict[str, Any]:
    """An Anthropic run with the blocks the reader keeps as given: a document in the
    task, thinking, a server tool's blocks, images and a document in tool results."""
    png = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
    doc = {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                          "data": "log"}, "title": "log.txt"}
    return {"system": "You operate tools.", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Read this."}, doc]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Let me look.", "signature": "sig"},
            {"type": "text", "text": "Searching."},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
             "input": {"query": "x"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
            {"type": "text", "text": "Now the tool."},
            {"type": "tool_use", "id": "toolu_1", "name": "computer",
             "input": {"action": "screenshot"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                {"type": "text", "text": "screen"}, {"type": "image", "source": png}, doc]},
            {"type": "text", "text": "Go on."}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Two calls."},
            {"type": "tool_use", "id": "toolu_2", "name": "computer",
             "input": {"action": "left_click"}},
            {"type": "tool_use", "id": "toolu_3", "name": "computer",
             "input": {"action": "type", "text": "hi"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "clicked"},
            {"type": "tool_result", "tool_use_id": "toolu_3", "content": "typed"}]},
        {"role": "assistant", "content": "Done."}]}


def traces() -> list[Any]:
    found = [load_trace(p) for p in example_trace_paths()]
    for path in sorted(DATA.glob("*/*")):
        if path.parent.name not in ("bad", "events"):  # events: a plugin's format
            found.extend(iter_traces(path))
    found.append(anthropic_messages.read(anthropic_run(), "anthropic run"))
    return found


def test_block_counts_and_breakpoint_positions_are_the_anthropic_renderings():
    """On the bundled runs and the test transcripts, under every strategy: the blocks
    counted (:func:`block_count`) are the blocks ``to_anthropic`` sends, and the block
    each breakpoint lands on is the one it marks, cuts inside a message included; the
    earliest message boundary the 20-block lookback reaches from each breakpoint
    (``BlockPoint.reach``, what ``compare`` counts under the anthropic cache) is the one
    found by counting those blocks back."""
    counting = PromptCounter(get_tokenizer("o200k_base"), "anthropic")
    checked = 0
    for trace in traces():
        step = max(1, len(trace.turns) // 6)
        for name in strategy_names():
            for n in range(1, len(trace.turns) + 2, step):
                try:
                    messages, raw = prompt_with_breakpoints(trace, n, name)
                    points = anthropic_breakpoints(messages, raw)
                    total, marked = rendered_blocks(messages, points)
                except Exception:  # not rendered (a strategy's refusal, bad tool arguments)
                    continue
                blocks = block_counts(messages)
                cuts = [i for i, off in points
                        if off is not None and messages[i]["role"] != "tool"]
                assert blocks[-1] + len(cuts) == total, (trace.name, name, n)
                positions = [position(blocks, cuts, p, points) for p in points]
                assert sorted(set(positions)) == marked, (trace.name, name, n, points)
                prompt, _ = counting.tokenize(messages, points)
                assert [p.reach for p in prompt.breakpoints] == [  # type: ignore[attr-defined]
                    reach(blocks, cuts, at, p[0]) for p, at in zip(points, positions,
                                                                  strict=True)]
                checked += 1
    assert checked > 500


def position(blocks: Any, cuts: list[int], point: tuple[int, int | None],
             points: list[tuple[int, int | None]]) -> int:
    """The 1-based position of the block a breakpoint marks, from the block counts."""
    index, offset = point
    if offset is None or index not in cuts:
        return blocks[index + 1] + sum(c <= index for c in cuts)
    rank = sum(1 for i, o in points if i == index and o is not None and o <= offset)
    return blocks[index] + sum(c < index for c in cuts) + rank


def reach(blocks: Any, cuts: list[int], at: int, index: int) -> int:
    """The fewest leading messages of a prefix ending at most LOOKBACK blocks before
    ``at`` (brute force)."""
    ok = [m for m in range(1, index + 1)
          if at - (blocks[m] + sum(c < m for c in cuts)) <= LOOKBACK]
    return min(ok) if ok else index + 1
