"""The text of a message as it is counted and searched: one place for every reader of it.

Token counting (:mod:`turnpress.core.tokens`), retention and the cache models read a
message through :func:`message_body`; a prompt is counted as :func:`prompt_text`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["json_argument", "message_body", "message_text", "prompt_text"]


def message_text(role: str, content: str) -> str:
    """How one message is counted: ``<|role|>\\n{content}\\n``."""
    return f"<|{role}|>\n{content}\n"


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, Mapping) and isinstance(part.get("text"), str):
        return part["text"]
    return json.dumps(part, ensure_ascii=False, sort_keys=True, default=str)


def _call_text(call: Any) -> str:
    if isinstance(call, Mapping):
        fn = call.get("function", call)
        if isinstance(fn, Mapping):
            name, arguments = fn.get("name"), fn.get("arguments", fn.get("input"))
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False, sort_keys=True,
                                       default=str)
            return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return json.dumps(call, ensure_ascii=False, sort_keys=True, default=str)


def _clipped(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= limit else value[: max(limit - 3, 0)] + "..."
    if isinstance(value, Mapping):
        return {str(k): _clipped(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clipped(v, limit) for v in value]
    return value


def json_argument(value: Any, limit: int | None = None) -> str:
    """A transcript tool call's argument as the JSON it was sent as (``{"city":
    "Paris"}``), each string in it cut to ``limit`` characters; a raw string argument
    (invalid JSON in the log) as it is, cut the same way."""
    if limit is not None:
        value = _clipped(value, limit)
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def message_body(message: Mapping[str, Any]) -> str:
    """The text of one message as counted and searched.

    A plain ``{"role", "content": str}`` message is its content. A message replayed
    from a provider transcript may have list-of-parts content (each text part's
    text; any other part as JSON), ``content: None``, and ``tool_calls``: each call
    is added on its own line as the JSON ``{"name", "arguments"}`` of its function.
    """
    content = message.get("content")
    calls = message.get("tool_calls")
    if isinstance(content, str) and not calls:
        return content
    if content is None:
        text = ""
    elif isinstance(content, str):
        text = content
    elif isinstance(content, (list, tuple)):
        text = "\n".join(_part_text(p) for p in content)
    else:
        text = _part_text(content)
    if calls:
        text = "\n".join([text, *(_call_text(c) for c in calls)] if text
                         else [_call_text(c) for c in calls])
    return text


def prompt_text(messages: Iterable[Mapping[str, Any]]) -> str:
    """The text a prompt is counted as: :func:`message_text` of each message, joined."""
    return "".join(message_text(m["role"], message_body(m)) for m in messages)
