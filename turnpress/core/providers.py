"""Message lists in the shapes people print or send: plain text and provider APIs."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from turnpress.core.compression import Breakpoint, render_with_breakpoints
from turnpress.core.model import Message

if TYPE_CHECKING:
    from turnpress.core.trace import Trace

__all__ = [
    "MAX_ANTHROPIC_BREAKPOINTS",
    "anthropic_breakpoints",
    "format_text",
    "prompt_with_breakpoints",
    "render_with_breakpoints",
    "to_anthropic",
    "to_openai",
]

def format_text(messages: Sequence[Message]) -> str:
    """Messages as readable text: a ``===== [i] role =====`` header before each content."""
    blocks = []
    for i, message in enumerate(messages, 1):
        blocks.append(f"===== [{i}] {message['role']} =====\n{message['content']}")
    return "\n\n".join(blocks) + "\n"


def to_openai(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The ``messages`` list of an OpenAI chat-completions request."""
    return [{"role": m["role"], "content": m["content"]} for m in messages]


# -- Anthropic ------------------------------------------------------------------------------

MAX_ANTHROPIC_BREAKPOINTS = 4
"""The API accepts at most four ``cache_control`` markers per request."""

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}


def anthropic_breakpoints(messages: Sequence[Message],
                          breakpoints: Iterable[Breakpoint]) -> list[Breakpoint]:
    """The cache breakpoints the Anthropic shape of ``messages`` really carries.

    ``breakpoints`` are a strategy's ``(message_index, offset | None)`` pairs
    (see ``Strategy.cache_breakpoints``). Out-of-range ones and ones that would
    mark an empty text are dropped, an offset at the end of a message becomes
    ``None``, an offset of 0 becomes the end of the message before; the result
    is sorted, without duplicates, and keeps the last
    :data:`MAX_ANTHROPIC_BREAKPOINTS` (the longest prefixes).
    """
    points: set[Breakpoint] = set()
    for index, offset in breakpoints:
        if not 0 <= index < len(messages):
            continue
        size = len(messages[index]["content"])
        if offset is not None and offset >= size:
            offset = None
        if offset is not None and offset <= 0:
            index, offset = index - 1, None
            if index < 0:
                continue
        if offset is None and not messages[index]["content"]:
            continue
        points.add((index, offset))
    ordered = sorted(points, key=lambda p: (p[0], p[1] if p[1] is not None else math.inf))
    return ordered[-MAX_ANTHROPIC_BREAKPOINTS:]


def _blocks(text: str, cuts: Sequence[int | None]) -> list[dict[str, Any]]:
    """``text`` as text blocks, cut at each offset; the block before each cut (and the
    last block, for a ``None`` cut) carries ``cache_control``."""
    blocks: list[dict[str, Any]] = []
    start = 0
    for cut in sorted(c for c in cuts if c is not None):
        blocks.append({"type": "text", "text": text[start:cut], "cache_control": dict(EPHEMERAL)})
        start = cut
    if start < len(text) or not blocks:
        blocks.append({"type": "text", "text": text[start:]})
    if None in cuts:
        blocks[-1]["cache_control"] = dict(EPHEMERAL)
    return blocks


def to_anthropic(messages: Sequence[Message], breakpoints: Iterable[Breakpoint] = ()
                 ) -> tuple[str | list[dict[str, Any]], list[dict[str, Any]]]:
    """``(system, messages)`` for an Anthropic Messages API request.

    Leading system messages become ``system``; the others keep their role.
    ``breakpoints`` (a strategy's stable prefix, as ``Strategy.cache_breakpoints``
    returns it; see :func:`render_with_breakpoints`) become ``cache_control:
    {"type": "ephemeral"}`` markers, at most four (:func:`anthropic_breakpoints`):
    a whole message is marked on its last text block, an offset inside a message
    splits it into two text blocks, the first one marked. ``system`` is a string
    (``""`` when there is none) and a content is a string, unless a marker needs
    the list-of-blocks form. A system message after a non-system one raises
    ``ValueError`` (the API has no system role inside the conversation).
    """
    cuts: dict[int, list[int | None]] = {}
    for index, offset in anthropic_breakpoints(messages, breakpoints):
        cuts.setdefault(index, []).append(offset)
    lead = 0
    while lead < len(messages) and messages[lead]["role"] == "system":
        lead += 1
    system_blocks: list[dict[str, Any]] = []
    for i in range(lead):
        if messages[i]["content"] or i in cuts:
            system_blocks.extend(_blocks(messages[i]["content"], cuts.get(i, [])))
    system: str | list[dict[str, Any]]
    if any("cache_control" in b for b in system_blocks):
        system = system_blocks
    else:
        system = "\n\n".join(b["text"] for b in system_blocks)
    out: list[dict[str, Any]] = []
    for i in range(lead, len(messages)):
        role, content = messages[i]["role"], messages[i]["content"]
        if role == "system":
            raise ValueError(f"message {i} is a system message after the conversation "
                             f"started; Anthropic has no system role there")
        out.append({"role": role,
                    "content": _blocks(content, cuts[i]) if i in cuts else content})
    return system, out


# -- prompts with their cache breakpoints -------------------------------------------------


def prompt_with_breakpoints(trace: Trace, n: int, compression: Any = True,
                            template_dirs: Iterable[str | os.PathLike[str]] = ()
                            ) -> tuple[list[Message], list[Breakpoint]]:
    """:func:`render_with_breakpoints` for the prompt of turn ``n`` of ``trace``
    (the messages are ``trace.prompt(n, compression)``)."""
    return render_with_breakpoints(**trace.prompt_arguments(n), compression=compression,
                                   template_dirs=template_dirs)
