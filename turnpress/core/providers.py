"""Message lists in the shapes people print or send: plain text and provider APIs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from turnpress.core.model import Message

__all__ = ["format_text", "to_openai"]


def format_text(messages: Sequence[Message]) -> str:
    """Messages as readable text: a ``===== [i] role =====`` header before each content."""
    blocks = []
    for i, message in enumerate(messages, 1):
        blocks.append(f"===== [{i}] {message['role']} =====\n{message['content']}")
    return "\n\n".join(blocks) + "\n"


def to_openai(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The ``messages`` list of an OpenAI chat-completions request."""
    return [{"role": m["role"], "content": m["content"]} for m in messages]
