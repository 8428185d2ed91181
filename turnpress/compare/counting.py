"""Counting one prompt: its tokens, and where the Anthropic cache model cuts it.

A :class:`PromptCounter` belongs to one comparison worker; it counts each prompt
exactly (through a :class:`~turnpress.core.tokens.TokenCounter`), reusing what the
prompt shares with the previous prompt of the same strategy on the same run
(a :class:`~turnpress.compare.reuse.PromptTrack`). A tokenizer that fails stops
the comparison with a :class:`~turnpress.compare.failures.CompareError` naming it.

Under the ``anthropic`` cache model it also counts the content blocks of the prompt's
Anthropic rendering (:func:`block_count`, one small count a message, the leading
messages equal to the previous prompt's taken from it), since the API looks back only
:data:`~turnpress.compare.cache.LOOKBACK` blocks from a breakpoint for a prefix it
wrote: each breakpoint becomes a :class:`~turnpress.compare.cache.BlockPoint` with the
earliest message boundary that lookback reaches. No text is kept for it.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from turnpress.compare.cache import BlockPoint, lookback_reach
from turnpress.compare.failures import CompareError, describe_failure, tokenizer_origin
from turnpress.compare.reuse import PromptTrack, roles
from turnpress.core.compression import RenderContext
from turnpress.core.model import INSTRUCTION_ROLES, Message
from turnpress.core.providers import anthropic_breakpoints, kept_content, to_anthropic
from turnpress.core.strategy import breakpoints_for
from turnpress.core.tokens import TokenCounter, TokenizedPrompt, Tokenizer

__all__ = ["PromptCounter", "block_count", "block_counts", "leading_system", "split_turns"]


def block_count(message: Message) -> int:
    """How many content blocks ``message`` is in the Anthropic rendering
    (:func:`~turnpress.core.providers.to_anthropic`) when no breakpoint cuts its text:
    a string content is one block (none when empty), content parts one each, a tool
    message one ``tool_result`` (whatever its content), an assistant message its
    thinking blocks, its text and one ``tool_use`` per call; a leading system message
    is one block of ``system`` (the blocks an imported Anthropic run gave are counted
    as sent). Several leading system messages with no breakpoint among them are sent as
    one ``system`` string, and counted here as one block each."""
    role, content = message["role"], message.get("content")  # type: ignore[attr-defined]
    if role == "tool":
        return 1
    if kept_content(message) is not None:  # rare: blocks sent as given while unchanged
        return _rendered_count(message)
    calls = message.get("tool_calls") or ()  # type: ignore[attr-defined]
    thinking = message.get("thinking_blocks") or ()  # type: ignore[attr-defined]
    if role in INSTRUCTION_ROLES or (isinstance(content, str) and not calls and not thinking):
        return 1 if content else 0
    parts = len(content) if isinstance(content, list) else 1 if content else 0
    return len(thinking) + parts + len(calls)


def _rendered_count(message: Message) -> int:
    """:func:`block_count` of a message rendered by ``to_anthropic`` itself (one that
    it refuses counts one block: the comparison does not render it)."""
    try:
        system, out = to_anthropic([message])
    except (ValueError, TypeError, KeyError, AttributeError):
        return 1
    content = out[0]["content"] if out else system
    return len(content) if isinstance(content, list) else 1 if content else 0


def block_counts(messages: Sequence[Message], start: int = 0,
                 earlier: array[int] | None = None) -> array[int]:
    """The content blocks of the first ``i`` messages, for each ``i`` (:func:`block_count`,
    4 bytes a message); the first ``start`` messages are those ``earlier`` counted."""
    if earlier is not None and 0 < start < len(earlier):
        blocks = earlier[:start + 1]  # a slice: a new array
    else:
        blocks, start = array("I", (0,)), 0
    total = blocks[-1]
    append = blocks.append
    for m in messages[start:]:
        total += block_count(m)
        append(total)
    return blocks


def with_reach(prompt: TokenizedPrompt, messages: Sequence[Message],
               blocks: array[int]) -> None:
    """Make each of ``prompt``'s breakpoints a :class:`BlockPoint` knowing how far back
    the API looks from it (``blocks``: :func:`block_counts` of ``messages``; a
    breakpoint at an offset cuts its message's text in two blocks, but in a tool
    message, whose whole ``tool_result`` is marked)."""
    points = prompt.breakpoints
    cuts = tuple(p.index for p in points
                 if p.offset is not None and messages[p.index]["role"] != "tool")
    prompt.breakpoints = tuple(
        BlockPoint(p.index, p.offset, p.tokens, p.key, lookback_reach(blocks, cuts, p, points))
        for p in points)


class PromptCounter:
    """Counts the prompts of one worker with ``tokenizer`` under the ``cache`` model."""

    def __init__(self, tokenizer: Tokenizer, cache: str) -> None:
        self.tokenizer = tokenizer
        self.cache = cache
        self.counter = TokenCounter(tokenizer)

    def tokenize(self, messages: Sequence[Message],
                  points: Iterable[tuple[int, int | None]] = (),
                  track: PromptTrack | None = None, same: int = 0,
                  reference: tuple[PromptTrack, TokenizedPrompt] | None = None
                  ) -> tuple[TokenizedPrompt, list[str]]:
        """The counted prompt and its messages' bodies; with a ``track``, the messages
        it shares with the track's previous prompt are reused (the first ``same`` are
        equal to that prompt's: their bodies are taken as they are), and the track
        moves on to this prompt. ``reference``: another track that has just counted a
        prompt of the same turn (the baseline's) and that prompt, with its token ids;
        when this prompt has the same roles, bodies and breakpoints, its counted prompt
        is that one, as it is (many strategies leave most prompts as the baseline has
        them)."""
        counter = self.counter
        blocks = self.cache == "anthropic"
        try:
            if track is None:
                bodies = counter.bodies(messages)
                prompt = counter.tokenize(messages, points, bodies)
                if blocks:
                    with_reach(prompt, messages, block_counts(messages))
                return prompt, bodies
            if same:
                bodies = track.bodies[:same]
                bodies.extend(counter.bodies(messages[same:]))
                kinds = track.roles[:same]
                kinds.extend(roles(messages[same:]))
            else:
                bodies = counter.bodies(messages)
                kinds = roles(messages)
            light, reused, counts = None, 0, None
            if reference is not None and reference[0].matches(kinds, bodies, points):
                prompt, light = reference[1], reference[0].prompt
                counts = reference[0].blocks
            else:
                earlier = track.prefix(kinds, bodies, same)
                prompt = counter.tokenize(messages, points, bodies, earlier)
                reused = earlier[1] if earlier is not None else 0
                if blocks:  # the first ``same`` messages are the previous prompt's
                    counts = block_counts(messages, same, track.blocks)
                    with_reach(prompt, messages, counts)
            track.update(kinds, bodies, prompt, messages, same, light, reused)
            track.blocks = counts
            return prompt, bodies
        except Exception as exc:
            name = self.tokenizer.name
            origin = tokenizer_origin(name)
            if str(exc).startswith(f"{origin} failed: "):  # the registry's guard named it
                raise CompareError(" ".join(str(exc).split())) from None
            raise CompareError(f"{origin} failed: {describe_failure(exc)}") from None

    def points(self, strategy: Any, messages: list[Message], turns: Any, memory: Any,
                ctx: RenderContext) -> list[tuple[int, int | None]]:
        """The cache breakpoints of ``messages`` as the Anthropic cache model counts them
        (none under the other models)."""
        if self.cache != "anthropic":
            return []
        raw = list(breakpoints_for(strategy, turns, memory, ctx, messages))
        return anthropic_breakpoints(messages, raw)  # the markers the request carries


def split_turns(messages: Sequence[Message], body: Callable[[Message], str]
                 ) -> tuple[str, list[tuple[str, str]]]:
    """A full-history conversation as (head text, [(assistant text, feedback text)])."""
    head: list[str] = []
    turns: list[tuple[list[str], list[str]]] = []
    for m in messages:
        if m["role"] == "assistant":
            turns.append(([body(m)], []))
        elif turns:
            turns[-1][1].append(body(m))
        else:
            head.append(body(m))
    return "\n".join(head), [("\n".join(a), "\n".join(f)) for a, f in turns]


def leading_system(messages: Sequence[Message]) -> int:
    """How many messages at the start of ``messages`` are system messages (the system
    prompt, which the floor reads from the cache)."""
    count = 0
    while count < len(messages) and messages[count].get("role") == "system":
        count += 1
    return count
