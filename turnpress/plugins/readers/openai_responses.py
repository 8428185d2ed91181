"""Built-in trace reader ``openai-responses``: OpenAI Responses API inputs (DESIGN §10, §12).

Reads a request body (``{"input": [...] | "text", "instructions"?, "tools"?, ...}``),
a bare list of input items, or a ``.jsonl`` file of either, one run a line. The
items are mapped to turnpress's chat shape by :mod:`turnpress.core.responses`:
``message`` items, ``function_call`` items (the tool calls of the assistant
message before them), ``function_call_output`` items (tool messages), and
``reasoning`` / ``compaction`` items kept whole, never shown as text, and sent
back as they were by ``render -f responses`` and ``compress(format="responses")``.
Under ``full-history`` the prompt of turn n is exactly the items before the n-th
assistant output, ``instructions`` apart.

Usage: an item may carry ``usage``, the Responses usage of the call that produced
it (``input_tokens``, ``input_tokens_details.cached_tokens``), as agent loggers
record it; it is that call's billed usage and is not part of the item as sent.

A bad item is one line: ``FILE: line L: item N: problem``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from turnpress.core.hookspecs import hookimpl
from turnpress.core.model import Usage
from turnpress.core.responses import items_to_messages, looks_like_items
from turnpress.core.trace import Trace, TraceError
from turnpress.plugins.readers._messages_to_trace import Entry, build_trace, tools_from, usage_from

__all__ = ["FORMAT", "detect", "entries", "read"]

FORMAT = "openai-responses"


def detect(data: Any, path: Path | None = None) -> bool:
    """A body with ``input`` (and no ``messages``), or a list of Responses items."""
    if isinstance(data, dict):
        return "input" in data and "messages" not in data and "trajectory_format" not in data
    return looks_like_items(data)


def entries(items: Sequence[Any], where: str, *, instructions: Any = None,
            start: int = 0) -> list[Entry]:
    """Responses ``items`` as entries of chat messages; an item's ``usage`` (billed,
    as some loggers store it) moves to its message's entry."""
    if not isinstance(items, list):
        raise TraceError(f"{where}: \"input\" must be a string or a list of items, got "
                         f"{type(items).__name__}")
    usages: dict[int, Usage] = {}
    sent: list[Any] = []
    for k, item in enumerate(items, start):
        if isinstance(item, Mapping) and "usage" in item:
            found = usage_from(item["usage"], where, k)
            if found is not None:
                usages[k] = found
            item = {key: v for key, v in item.items() if key != "usage"}
        sent.append(item)
    messages = items_to_messages(sent, where, instructions=instructions, start=start)
    out = []
    firsts = [k for k, _ in messages] + [start + len(items)]
    for (k, message), end in zip(messages, firsts[1:], strict=True):
        usage = next((usages[j] for j in range(max(k, start), end) if j in usages), None)
        out.append(Entry(k, message, usage if message["role"] == "assistant" else None))
    return out


def read(data: Any, where: str) -> Trace:
    """Read a request body or a list of items (see :func:`detect`)."""
    if isinstance(data, list):
        return _trace(entries(data, where), where, None)
    items = data.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    return _trace(entries(items, where, instructions=data.get("instructions")), where,
                  data.get("tools"))


def _trace(found: list[Entry], where: str, tools: Any) -> Trace:
    try:
        if isinstance(tools, list):  # built-in tools (web_search...) are not functions
            tools = [t for t in tools if not (isinstance(t, Mapping)
                                              and t.get("type", "function") != "function")]
        return build_trace(found, where=where, source=FORMAT,
                           tools=tools_from(tools, where))
    except TraceError as exc:  # the shared mapping numbers messages; here they are items
        raise TraceError(str(exc).replace(": message ", ": item ", 1)) from None


@hookimpl
def register_trace_readers(register: Callable[..., None]) -> None:
    """Register ``openai-responses``."""
    register(FORMAT, detect, read)
