"""OpenAI Responses API input items <-> turnpress's canonical chat messages (DESIGN §10, §12).

turnpress keeps every transcript in one shape, OpenAI chat messages, so every
strategy reads every format the same way. A Responses ``input`` is a list of
items; :func:`items_to_messages` maps them:

- a ``message`` item (or an item with a ``role`` and no ``type``: an "easy input
  message") -> a chat message of that role; ``input_text`` / ``output_text`` parts
  become its text (a string for one part, text parts for several),
  ``input_image`` an ``image_url`` part, any other part is kept as given;
- ``function_call`` items -> ``tool_calls`` of the assistant message just before
  them (a new assistant message with ``content: null`` when there is none):
  ``{"id": call_id, "type": "function", "function": {"name", "arguments"}}``;
- a ``function_call_output`` item -> ``{"role": "tool", "tool_call_id", "content"}``;
- ``reasoning``, ``compaction`` and any other item type are opaque: the API wants
  them back as they were. They add no text and are carried, verbatim, by a chat
  message: a ``compaction`` item by the message before it (it ends the history it
  compacts), any other by the next one (a ``reasoning`` item comes before its
  output), the last one when they end the input.

Every chat message keeps the items it came from under the key :data:`KEPT`.
:func:`to_responses` goes back: a message still equal to what its items map to
gives those items verbatim (so ``full-history`` renders each request exactly as
sent); a message a strategy wrote or changed is converted from its chat fields,
and an assistant message's opaque items (``reasoning``) are sent before it still.
A ``compaction`` item stands for history turnpress cannot see: when a strategy's
view drops the message carrying one, :func:`with_compactions` puts it back first.
A request body's ``instructions`` is a leading system message marked
:data:`INSTRUCTIONS`; it goes back to ``instructions``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from turnpress.core.errors import TraceError, a_or_an, quote

__all__ = [
    "INSTRUCTIONS",
    "ITEM_TYPES",
    "KEPT",
    "OPAQUE_TYPES",
    "chat_content",
    "chat_part",
    "items_to_messages",
    "looks_like_items",
    "responses_parts",
    "to_responses",
    "with_compactions",
]

#: the key of a chat message holding the Responses items it came from
KEPT = "_responses"
#: the value of :data:`KEPT` on the system message made of a body's ``instructions``
INSTRUCTIONS = "instructions"
#: item types turnpress reads into chat messages
ITEM_TYPES = ("message", "function_call", "function_call_output")
#: item types kept whole and sent back as they were
OPAQUE_TYPES = ("reasoning", "compaction")
ROLES = ("user", "assistant", "system", "developer")
TEXT_PARTS = ("input_text", "output_text", "text")
def looks_like_items(data: Any) -> bool:
    """Whether a list is Responses input items: one item has a Responses ``type``
    (``message``, ``function_call``, ``reasoning``...)."""
    return isinstance(data, list) and any(
        isinstance(i, Mapping) and i.get("type") in (*ITEM_TYPES, *OPAQUE_TYPES)
        for i in data)


def _fail(where: str, index: int, problem: str) -> TraceError:
    return TraceError(f"{where}: item {index}: {problem}")


def _part(part: Any, role: str, where: str, index: int) -> None:
    """Check one content part of a Responses message (``chat_content`` converts it)."""
    if not isinstance(part, Mapping):
        raise _fail(where, index, f"a content part must be an object, got "
                                  f"{type(part).__name__} {quote(part)}")
    kind = part.get("type")
    if kind in TEXT_PARTS and not isinstance(part.get("text"), str):
        raise _fail(where, index, f"{a_or_an(kind)} part needs a string \"text\"")


def chat_part(part: Mapping[str, Any]) -> dict[str, Any]:
    """A Responses content part in the chat shape: a text part (``input_text``,
    ``output_text``) with a string ``text`` as a ``text`` part, an ``input_image`` with a
    URL as an ``image_url`` part (its ``detail`` kept), any other part as a copy of it."""
    kind = part.get("type")
    if kind in TEXT_PARTS and isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        detail = part.get("detail")  # chat's image_url carries it too: kept both ways
        return {"type": "image_url", "image_url": {
            "url": part["image_url"], **({} if detail is None else {"detail": detail})}}
    return dict(part)


def chat_content(parts: Sequence[Any]) -> Any:
    """A Responses message's list of content parts in the chat shape (:func:`chat_part`
    each; a part that is no object as it is): one text part alone is its text."""
    out = [chat_part(p) if isinstance(p, Mapping) else p for p in parts]
    if (len(out) == 1 and isinstance(out[0], Mapping) and out[0].get("type") == "text"
            and set(out[0]) == {"type", "text"}):
        return out[0]["text"]
    return out


def _content(content: Any, role: str, where: str, index: int) -> Any:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _fail(where, index, f"{a_or_an(role)} message's \"content\" must be a string or a "
                                  f"list of content parts, got {type(content).__name__}")
    for part in content:
        _part(part, role, where, index)
    return chat_content(content)


def _output_text(output: Any, where: str, index: int) -> Any:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return _content(output, "tool", where, index)
    raise _fail(where, index, f"a function_call_output's \"output\" must be a string or a "
                              f"list of content parts, got {type(output).__name__}")


def items_to_messages(items: Sequence[Any], where: str, *, instructions: Any = None,
                      start: int = 0) -> list[tuple[int, dict[str, Any]]]:
    """Responses input ``items`` as chat messages (the mapping in the module
    docstring), each with the index of its first item (numbered from ``start``).

    ``instructions`` (a request body's) becomes a leading system message. A bad item
    raises :class:`TraceError` ``"WHERE: item N: problem"``.
    """
    out: list[tuple[int, dict[str, Any]]] = []
    if instructions is not None:
        if not isinstance(instructions, str):
            raise TraceError(f"{where}: \"instructions\" must be a string, got "
                             f"{type(instructions).__name__}")
        out.append((-1, {"role": "system", "content": instructions, KEPT: INSTRUCTIONS}))
    pending: list[Any] = []  # opaque items waiting for the next message
    open_call = False  # the last message is an assistant message function_calls may join
    for k, item in enumerate(items, start):
        if not isinstance(item, Mapping):
            raise _fail(where, k, f"an input item must be an object, got "
                                  f"{type(item).__name__} {quote(item)}")
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            role = item.get("role")
            if role not in ROLES:
                raise _fail(where, k, f"unknown role {quote(role)}; a message item's role "
                                      f"must be one of {', '.join(ROLES)}")
            if "content" not in item:
                raise _fail(where, k, f"{a_or_an(role)} message item needs \"content\"")
            message = {"role": role, "content": _content(item["content"], role, where, k)}
            out.append((k, {**message, KEPT: [*pending, dict(item)]}))
            pending, open_call = [], role == "assistant"
        elif kind == "function_call":
            call_id, name = item.get("call_id"), item.get("name")
            if not isinstance(call_id, str) or not isinstance(name, str):
                raise _fail(where, k, "a function_call item needs string \"call_id\" and "
                                      "\"name\"")
            arguments = item.get("arguments", "")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            call = {"id": call_id, "type": "function",
                    "function": {"name": name, "arguments": arguments}}
            if open_call and not pending:
                message = out[-1][1]
                message["tool_calls"] = [*message.get("tool_calls", []), call]
                message[KEPT] = [*message[KEPT], dict(item)]
            else:
                out.append((k, {"role": "assistant", "content": None, "tool_calls": [call],
                                KEPT: [*pending, dict(item)]}))
                pending, open_call = [], True
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if not isinstance(call_id, str):
                raise _fail(where, k, "a function_call_output item needs a string "
                                      "\"call_id\"")
            if "output" not in item:
                raise _fail(where, k, "a function_call_output item needs \"output\"")
            out.append((k, {"role": "tool", "tool_call_id": call_id,
                            "content": _output_text(item["output"], where, k),
                            KEPT: [*pending, dict(item)]}))
            pending, open_call = [], False
        elif kind == "compaction" and out and out[-1][0] >= 0 and not pending:
            # the history so far, compacted: it belongs after the message before it
            out[-1][1][KEPT] = [*out[-1][1][KEPT], dict(item)]
            open_call = False
        elif isinstance(kind, str):
            pending.append(dict(item))  # reasoning...: opaque, kept whole, before its output
        else:
            raise _fail(where, k, f"an input item needs a \"type\" (message, function_call, "
                                  f"function_call_output, reasoning...) or a \"role\"; got "
                                  f"the keys {quote(sorted(map(str, item)))}")
    if pending:
        if not out or out[-1][0] < 0:
            raise _fail(where, start, "the input holds only opaque items (reasoning, "
                                      "compaction...), no message")
        out[-1][1][KEPT] = [*out[-1][1][KEPT], *pending]
    return out


def _chat(message: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k != KEPT}


def _fresh(message: Mapping[str, Any]) -> bool:
    """Whether ``message`` still is what its kept items map to."""
    kept = message.get(KEPT)
    if not isinstance(kept, list):
        return False
    try:
        again = items_to_messages(kept, "kept")
    except TraceError:
        return False
    return len(again) == 1 and _chat(again[0][1]) == _chat(message)


def responses_parts(content: Any, role: str) -> Any:
    """A chat message's content (of ``role``) as Responses content, the inverse of
    :func:`chat_content`: a text part as ``output_text`` (assistant) or ``input_text``,
    an ``image_url`` part as an ``input_image`` (its ``detail`` kept), any other part as
    it is; no content is ``""``."""
    if content is None or isinstance(content, str):
        return content or ""
    text_type = "output_text" if role == "assistant" else "input_text"
    parts = []
    for part in content:
        if isinstance(part, Mapping) and part.get("type") == "text":
            parts.append({"type": text_type, "text": part.get("text", "")})
        elif isinstance(part, Mapping) and part.get("type") == "image_url":
            url = part.get("image_url")
            detail = url.get("detail") if isinstance(url, Mapping) else None
            parts.append({"type": "input_image", "image_url":
                          url.get("url") if isinstance(url, Mapping) else url,
                          **({} if detail is None else {"detail": detail})})
        else:
            parts.append(part)
    return parts


def _tool_output(content: Any) -> Any:
    if content is None or isinstance(content, str):
        return content or ""
    return responses_parts(content, "tool")


def _converted(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    role = message.get("role")
    kept = message.get(KEPT)
    opaque = [i for i in kept if isinstance(i, Mapping) and i.get("type") in OPAQUE_TYPES] \
        if isinstance(kept, list) else []
    if role == "tool":
        return [*opaque, {"type": "function_call_output", "call_id": message.get("tool_call_id"),
                          "output": _tool_output(message.get("content"))}]
    items: list[dict[str, Any]] = list(opaque)
    content = message.get("content")
    calls = message.get("tool_calls") or []
    if content or not calls:
        items.append({"role": role, "content": responses_parts(content, str(role))})
    for call in calls:
        function = call.get("function", {}) if isinstance(call, Mapping) else {}
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        items.append({"type": "function_call", "call_id": call.get("id"),
                      "name": function.get("name"), "arguments": arguments})
    return items


def to_responses(messages: Sequence[Mapping[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """``(instructions, input items)`` of a Responses API request for chat ``messages``
    (see the module docstring): ``instructions`` is ``None`` unless a message is a
    body's instructions. A converted message keeps its role, content, tool calls and
    call id; another key (``name``, ``reasoning_content``...) is left out
    (``turnpress.core.message_keys.left_out_keys(messages, "responses")`` lists them)."""
    instructions: str | None = None
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.get(KEPT) == INSTRUCTIONS and instructions is None:
            content = message.get("content")
            instructions = content if isinstance(content, str) else json.dumps(content)
        elif _fresh(message):
            items.extend(dict(i) for i in message[KEPT])
        else:
            items.extend(_converted(message))
    return instructions, items


def with_compactions(source: Sequence[Mapping[str, Any]],
                     items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``items`` with every ``compaction`` item of the ``source`` messages that they
    lack put back at the start, in order: it holds the run's earlier history, which no
    strategy can show another way."""
    missing = [dict(i) for m in source for i in (m.get(KEPT) if isinstance(
        m.get(KEPT), list) else ()) if isinstance(i, Mapping) and i.get("type") == "compaction"
        and i not in items]
    return [*missing, *items] if missing else items
