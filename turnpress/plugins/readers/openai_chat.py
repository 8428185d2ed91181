"""Built-in trace reader ``openai-chat``: OpenAI chat-completions transcripts (DESIGN §10).

Reads a message list (``[{"role", "content", "tool_calls"}, ...]``), a request
body (``{"messages": [...], "tools": [...], ...}``), or a ``.jsonl`` file of
either, one run a line. Messages are kept verbatim, every key as logged, so the
``full-history`` prompt of turn n (``--format openai``) is byte for byte the
messages before the n-th assistant message. One key is not part of a message as
sent: a ``usage`` object on an assistant message (what logging proxies record:
the response's usage) is read as that call's billed usage and left out of the
replayed message. The mapping itself is in ``turnpress.plugins.readers._messages_to_trace``.

Public: :func:`trace_from_messages` (used by ``turnpress.compress``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from turnpress.core.hookspecs import hookimpl
from turnpress.core.responses import looks_like_items
from turnpress.core.trace import Trace, TraceError
from turnpress.plugins.readers._messages_to_trace import (
    Entry,
    build_trace,
    fail,
    looks_anthropic,
    tools_from,
    usage_from,
)

__all__ = ["FORMAT", "detect", "message_entries", "read", "trace_from_messages"]

FORMAT = "openai-chat"


def detect(data: Any, path: Path | None = None) -> bool:
    """A message list (empty, or starting with a ``role``) or a ``{"messages"}`` body
    that is neither mini-swe-agent's nor Anthropic's."""
    if isinstance(data, list):
        return not data or (isinstance(data[0], dict) and "role" in data[0]
                            and not looks_like_items(data))
    return (isinstance(data, dict) and "messages" in data
            and "trajectory_format" not in data and not looks_anthropic(data))


def message_entries(messages: Sequence[Any], where: str) -> list[Entry]:
    """OpenAI chat ``messages`` as entries, each with its index; an assistant message's
    ``usage`` (billed, as some loggers store it) moves to the entry."""
    entries = []
    for i, m in enumerate(messages):
        if isinstance(m, dict) and "usage" in m and m.get("role") == "assistant":
            usage = usage_from(m["usage"], where, i)
            m = {k: v for k, v in m.items() if k != "usage"}
            entries.append(Entry(i, m, usage))
        else:
            entries.append(Entry(i, m))
    return entries


def trace_from_messages(messages: Sequence[Mapping[str, Any]], *,
                        tools: Any = None, where: str = "messages") -> Trace:
    """The :class:`Trace` of one OpenAI chat message list.

    ``tools`` is the request's ``tools`` list (OpenAI or Anthropic shape) or a
    ``{name: Tool | schema}`` mapping. Raises :class:`TraceError` (a ``ValueError``)
    as ``"WHERE: message N: what is wrong"``.
    """
    if not isinstance(messages, list):
        raise TraceError(f"{where}: \"messages\" must be a list of message objects, got "
                         f"{type(messages).__name__}")
    tool_map = tools if isinstance(tools, Mapping) else tools_from(tools, where)
    return build_trace(message_entries(messages, where), where=where, source=FORMAT,
                       tools=tool_map)


def read(data: Any, where: str) -> Trace:
    """Read a message list or a request body (see :func:`detect`)."""
    if isinstance(data, list):
        return trace_from_messages(data, where=where)
    if not isinstance(data, dict):
        raise fail(where, None, f"expected a message list or {{\"messages\": [...]}}, got "
                                f"{type(data).__name__}")
    return trace_from_messages(data["messages"], tools=data.get("tools"), where=where)


@hookimpl
def register_trace_readers(register: Callable[..., None]) -> None:
    """Register ``openai-chat``."""
    register(FORMAT, detect, read)
