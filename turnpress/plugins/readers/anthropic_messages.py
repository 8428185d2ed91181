"""Built-in trace reader ``anthropic-messages``: Anthropic Messages runs (DESIGN §10).

A run is a request body ``{"system", "messages", "tools"?}`` whose messages hold
the blocks of :data:`MESSAGE_BLOCKS` (``text``, ``image``, ``document``,
``tool_use``, ``tool_result``, ``thinking``...). turnpress keeps
transcripts in ONE canonical shape, OpenAI chat, so every strategy reads every
format the same way; :func:`to_openai_messages` converts:

- ``system`` (a string or text blocks) -> a leading system message (its text; several
  blocks are kept under ``_anthropic`` and come back as those blocks while a strategy
  leaves the system prompt as it was);
- an assistant message -> ``content`` (its text: a string for one text block, a
  list of text parts for several, ``null`` when it only calls tools),
  ``tool_calls`` (each ``tool_use`` -> ``{"id", "type": "function", "function":
  {"name", "arguments": JSON of input}}``) and ``thinking_blocks`` (its
  ``thinking`` / ``redacted_thinking`` blocks verbatim, signature included: the
  name LiteLLM gives them in the OpenAI shape; text views ignore them); its server
  tool blocks (``server_tool_use``, ``web_search_tool_result``, ``mcp_tool_use``,
  ``mcp_tool_result``...: :data:`SERVER_BLOCKS`) show in its text as their markers,
  all its blocks then kept under ``_anthropic``;
- a user message -> one ``tool`` message per ``tool_result`` block
  (``tool_call_id`` = ``tool_use_id``; a block-list content and ``is_error``
  kept as given under the key ``_anthropic``, see :data:`KEPT`; the tool
  message's content is the text of its text blocks, and each image, document or
  search_result block in it, which an OpenAI tool message cannot hold, shows as
  its marker ``[image]``, ``[document]``, ``[search_result]``), and its other
  blocks as a user message (a string for one text block, else content parts;
  base64 and url images as ``image_url``; a ``document``, ``search_result``,
  ``container_upload`` or Files API image as a text part holding its marker, the
  message's blocks then kept under ``_anthropic``), in block order.

``core.providers.to_anthropic`` (``--format anthropic``) turns them back into
blocks: the same thinking, text, tool_use and tool_result blocks (``is_error``
and block-list content as given while a strategy left the tool message's text as
it was: so a screenshot comes back whole, and an old one that a strategy masked or
cut goes as its text, ``[image]`` and all; a user message's kept blocks on the same
condition; an assistant message's kept blocks while its text, thinking blocks and
tool calls are as they were), system apart, tool results and the user text after
them in one user message. ``to_openai`` and :func:`to_openai_messages` leave
``_anthropic`` out (the OpenAI API has no such key). What the round trip
does not keep: the request's own ``cache_control`` markers (turnpress places its
own breakpoints), a one-text-block user content coming back as a string, and
the order of thinking blocks placed after other blocks (they are sent first, as
the API returns them). Any other block, or a block in the wrong role's message, is
refused with one error naming the message and content block index, the block's
type and what to do.

A ``usage`` object on an assistant message (the response's usage, as logging
proxies record it: ``input_tokens``, ``cache_read_input_tokens``,
``cache_creation_input_tokens``) is that call's billed usage.

Public: :func:`to_openai_messages` (used by ``turnpress.compress``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from turnpress.core.errors import a_or_an, quote
from turnpress.core.hookspecs import hookimpl
from turnpress.core.providers import part_text
from turnpress.core.trace import Trace, TraceError
from turnpress.plugins.readers._messages_to_trace import (
    Entry,
    build_trace,
    fail,
    looks_anthropic,
    text_of,
    tool_error,
    tools_from,
    usage_from,
)

__all__ = ["FORMAT", "detect", "message_entries", "read", "to_openai_messages"]

FORMAT = "anthropic-messages"
ROLES = ("user", "assistant")
#: assistant blocks of extended thinking, kept verbatim (signature and all)
THINKING_BLOCKS = ("thinking", "redacted_thinking")
#: the blocks a tool_result's content may hold besides text; the OpenAI shape shows each
#: as its marker (``[image]``, ``[document]``, ``[search_result]``)
RESULT_BLOCKS = ("image", "document", "search_result")
#: the blocks a user message may hold besides text and tool_result: a base64 or url
#: image becomes an ``image_url`` part, any other of these (which the OpenAI shape
#: cannot hold) shows as its marker (``[document]``...), the blocks kept (see KEPT)
USER_BLOCKS = ("image", "document", "search_result", "container_upload")
#: the blocks of the tools Anthropic's side runs (web search and fetch, code execution,
#: tool search, MCP servers): their use and its result, both in the assistant message;
#: the OpenAI shape shows each as its marker (``[server_tool_use]``...), the message's
#: blocks kept (see KEPT)
SERVER_USES = ("server_tool_use", "mcp_tool_use")
SERVER_BLOCKS = (*SERVER_USES, "web_search_tool_result", "web_fetch_tool_result",
                 "code_execution_tool_result", "bash_code_execution_tool_result",
                 "text_editor_code_execution_tool_result", "tool_search_tool_result",
                 "mcp_tool_result")
#: the blocks each role's message may hold
MESSAGE_BLOCKS = {"user": ("text", *USER_BLOCKS, "tool_result"),
                  "assistant": ("text", "tool_use", *THINKING_BLOCKS, *SERVER_BLOCKS)}
#: as errors list them
HOLDS = {"user": f"{', '.join(MESSAGE_BLOCKS['user'][:-1])} and tool_result blocks",
         "assistant": "text, thinking, redacted_thinking, tool_use and server tool blocks "
                      "(server_tool_use, web_search_tool_result, mcp_tool_use...)"}
#: the key of a message holding what its Anthropic blocks had that the OpenAI shape
#: cannot hold: a tool message's tool_result ``content`` as a block list and
#: ``is_error``; a user or assistant message's blocks (``content``) when one of them
#: shows as a marker; ``to_openai`` drops it
KEPT = "_anthropic"


def detect(data: Any, path: Path | None = None) -> bool:
    """``{"system"?, "messages"}`` with Anthropic blocks or an Anthropic system field."""
    return looks_anthropic(data)


def _text_content(texts: list[str]) -> str | list[dict[str, str]]:
    return texts[0] if len(texts) == 1 else [{"type": "text", "text": t} for t in texts]


def _user_part(block: dict[str, Any], where: str, index: int, k: int
               ) -> tuple[dict[str, Any], bool]:
    """A user message's block as an OpenAI content part, and whether the part is the
    block's marker (the block kept, see :data:`KEPT`) rather than the block itself."""
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": _text(block, f"content block {k} (text)", where,
                                              index)}, False
    if kind == "image":
        source = block.get("source")
        if not isinstance(source, dict):
            raise fail(where, index, f"content block {k} (image) needs a \"source\" object")
        if source.get("type") == "base64":
            url = f"data:{source.get('media_type', '')};base64,{source.get('data', '')}"
            return {"type": "image_url", "image_url": {"url": url}}, False
        if source.get("type") == "url":
            return {"type": "image_url", "image_url": {"url": str(source.get("url", ""))}}, False
    elif kind not in USER_BLOCKS:
        raise fail(where, index, _unsupported(k, kind, "user"))
    return {"type": "text", "text": part_text(block)}, True  # an image from the Files API too


def _unsupported(k: int, kind: Any, role: str) -> str:
    """Why content block ``k``, of type ``kind``, cannot be in a ``role`` message, and what
    to do."""
    listing = HOLDS[role]
    other = next((r for r, kinds in MESSAGE_BLOCKS.items() if r != role and kind in kinds),
                 None)
    if other is not None:
        return (f"content block {k} is {quote(kind)}, which belongs in {a_or_an(other)} "
                f"message: {a_or_an(role)} message holds {listing}")
    return (f"content block {k} is {quote(kind)}, which turnpress cannot carry: "
            f"{a_or_an(role)} message holds {listing}; send what it says as a text block")


def _user_message(parts: list[tuple[dict[str, Any], bool]], blocks: list[dict[str, Any]]
                  ) -> dict[str, Any]:
    """The user message of a run of blocks (no tool_result among them) and their parts;
    the blocks are kept when a part is a marker (see :data:`KEPT`)."""
    message = {"role": "user", "content": _parts_content([p for p, _ in parts])
               if parts else ""}
    if any(marker for _, marker in parts):
        message[KEPT] = {"content": [_unmarked(b) for b in blocks]}
    return message


def _unmarked(block: Any) -> Any:
    """A block without its ``cache_control`` (turnpress places its own breakpoints)."""
    return {k: v for k, v in block.items() if k != "cache_control"} if isinstance(
        block, dict) else block


def _parts_content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    if len(parts) == 1 and parts[0]["type"] == "text":
        return parts[0]["text"]
    return parts


def _result_texts(content: list[Any], at: str, where: str, index: int) -> list[str]:
    """The texts of a tool_result's block-list content: each text block's text, each
    image, document or search_result block as its marker (``[image]``...: the block
    itself is kept, see :data:`KEPT`). Any other block raises :class:`TraceError`."""
    texts = []
    for k, b in enumerate(content):
        kind = b.get("type") if isinstance(b, dict) else None
        if kind == "text":
            texts.append(_text(b, f"{at}: its content block {k} (text)", where, index))
        elif kind in RESULT_BLOCKS:
            texts.append(part_text(b))
        else:
            shown = quote(kind) if isinstance(b, dict) else f"a {type(b).__name__}, not a block"
            raise fail(where, index, f"{at}: its content block {k} is {shown}; a "
                                     f"tool_result's content holds text, "
                                     f"{', '.join(RESULT_BLOCKS[:-1])} and {RESULT_BLOCKS[-1]} "
                                     f"blocks: send anything else as a text block")
    return texts


def _tool_result(block: dict[str, Any], where: str, index: int, k: int) -> Entry:
    """The tool message of a tool_result block (content block ``k`` of its message)."""
    at = f"content block {k} (tool_result)"
    content = block.get("content", "")
    kept: dict[str, Any] = {}  # what the OpenAI shape has no place for (see KEPT)
    if isinstance(content, list) and (len(content) == 1 or any(
            isinstance(b, dict) and set(b) - {"type", "text", "cache_control"}
            for b in content)):
        kept["content"] = [_unmarked(b) for b in content]
    if isinstance(block.get("is_error"), bool):
        kept["is_error"] = block["is_error"]
    if isinstance(content, list):
        texts = _result_texts(content, at, where, index)
        content = _text_content(texts) if texts else ""
    elif not isinstance(content, str):
        raise fail(where, index, f"{at}: \"content\" must be a string or a list of content "
                                 f"blocks")
    if not isinstance(block.get("tool_use_id"), str):
        raise fail(where, index, f"{at} needs a string \"tool_use_id\" (the id of the "
                                 f"tool_use it answers)")
    message = {"role": "tool", "tool_call_id": block["tool_use_id"], "content": content}
    if kept:
        message[KEPT] = kept
    error = None
    if block.get("is_error"):
        error = tool_error(content)
    return Entry(index, message, error=error, blocks=(k,))


def _assistant(m: dict[str, Any], where: str, index: int) -> tuple[dict[str, Any],
                                                                   tuple[int, ...]]:
    """An assistant message in the OpenAI shape, and the content block index of each of
    its tool_use blocks (see ``Entry.blocks``)."""
    content = m["content"]
    if isinstance(content, str):
        return {"role": "assistant", "content": content}, ()
    texts, calls, thinking, marked, uses = [], [], [], False, []
    for k, block in enumerate(content):
        if not isinstance(block, dict):
            raise fail(where, index, f"content block {k} must be an object, got "
                                     f"{type(block).__name__}")
        kind = block.get("type")
        at = f"content block {k} ({kind})"
        if kind == "text":
            texts.append(_text(block, at, where, index))
        elif kind in THINKING_BLOCKS:
            thinking.append(_thinking(block, at, where, index))
        elif kind == "tool_use":
            calls.append(_call(block, at, where, index))
            uses.append(k)
        elif kind in SERVER_BLOCKS:
            _check_server_block(block, at, where, index)
            texts.append(part_text(block))
            marked = True
        else:
            raise fail(where, index, _unsupported(k, kind, "assistant"))
    out: dict[str, Any] = {"role": "assistant",
                           "content": _text_content(texts) if texts else (None if calls
                                                                          else "")}
    if calls:
        out["tool_calls"] = calls
    if thinking:
        out["thinking_blocks"] = thinking
    if marked:
        out[KEPT] = {"content": [_unmarked(b) for b in content]}
    return out, tuple(uses)


def _text(block: dict[str, Any], at: str, where: str, index: int) -> str:
    """A text block's ``text`` (``at`` names the block in the error if it has none)."""
    if not isinstance(block.get("text"), str):
        raise fail(where, index, f"{at} needs a string \"text\"")
    return block["text"]


def _thinking(block: dict[str, Any], at: str, where: str, index: int) -> dict[str, Any]:
    """A thinking or redacted_thinking block, checked and copied (kept verbatim)."""
    if block["type"] == "thinking" and not isinstance(block.get("thinking"), str):
        raise fail(where, index, f"{at} needs a string \"thinking\" (and the "
                                 f"\"signature\" the API returned with it)")
    if block["type"] == "redacted_thinking" and not isinstance(block.get("data"), str):
        raise fail(where, index, f"{at} needs a string \"data\"")
    return dict(block)


def _call(block: dict[str, Any], at: str, where: str, index: int) -> dict[str, Any]:
    """A tool_use block as an OpenAI tool call."""
    if not isinstance(block.get("name"), str) or not isinstance(block.get("input", {}), dict):
        raise fail(where, index, f"{at} needs \"id\", \"name\" and an object \"input\"")
    return {"id": str(block.get("id", "")), "type": "function",
            "function": {"name": block["name"], "arguments": json.dumps(
                block.get("input", {}), ensure_ascii=False)}}


def _check_server_block(block: dict[str, Any], at: str, where: str, index: int) -> None:
    """A server tool's use (its ``id``, ``name`` and ``input``) or result (the
    ``tool_use_id`` of its use), the fields that pair them."""
    if block["type"] in SERVER_USES:
        if not (isinstance(block.get("id"), str) and isinstance(block.get("name"), str)
                and isinstance(block.get("input"), dict)):
            raise fail(where, index, f"{at} needs a string \"id\", a string \"name\" and "
                                     f"an object \"input\"")
    elif not isinstance(block.get("tool_use_id"), str):
        raise fail(where, index, f"{at} needs a string \"tool_use_id\" (the id of the "
                                 f"{' or '.join(SERVER_USES)} it answers)")


#: where an error about a system-role message says the system prompt goes
SYSTEM_HINT = "the system prompt is the top-level \"system\""


def message_entries(system: Any, messages: Any, where: str, *,
                    system_hint: str = SYSTEM_HINT) -> list[Entry]:
    """Anthropic ``system`` and ``messages`` as OpenAI-chat entries (each with its index
    in ``messages``, -1 for the system prompt); a malformed message raises
    :class:`TraceError` naming ``where`` and its index (a message with the role
    ``system`` says ``system_hint``: where the caller takes the system prompt)."""
    if not isinstance(messages, list):
        raise TraceError(f"{where}: \"messages\" must be a list of message objects, got "
                         f"{type(messages).__name__}")
    entries: list[Entry] = []
    blocks = system if isinstance(system, list) else None
    if blocks is not None:
        system = text_of(blocks)
    if system is not None and not isinstance(system, str):
        raise TraceError(f"{where}: \"system\" must be a string or text blocks")
    if system:
        message: dict[str, Any] = {"role": "system", "content": system}
        if blocks is not None and len(blocks) > 1:  # given back as they were (see KEPT)
            message[KEPT] = {"content": [_unmarked(b) for b in blocks]}
        entries.append(Entry(-1, message, blocks=()))
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise fail(where, i, f"expected a JSON object with \"role\" and \"content\", got "
                                 f"{type(m).__name__}")
        role = m.get("role")
        if role not in ROLES:
            raise fail(where, i, f"unknown role {quote(role)}; an Anthropic message's role must "
                                 f"be one of {', '.join(ROLES)} ({system_hint})")
        content = m.get("content")
        if not isinstance(content, (str, list)):
            raise fail(where, i, "\"content\" must be a string or a list of content blocks")
        if role == "assistant":
            usage = usage_from(m.get("usage"), where, i)
            message, uses = _assistant(m, where, i)
            entries.append(Entry(i, message, usage, blocks=uses))
            continue
        if isinstance(content, str):
            entries.append(Entry(i, {"role": "user", "content": content}, blocks=()))
            continue
        entries.extend(_user_entries(content, where, i))
    return entries


def _user_entries(content: list[Any], where: str, index: int) -> list[Entry]:
    """A user message's blocks as OpenAI-chat entries: a tool message per tool_result
    block, a user message per run of other blocks, in block order."""
    entries: list[Entry] = []
    parts: list[tuple[dict[str, Any], bool]] = []
    blocks: list[dict[str, Any]] = []
    for k, block in enumerate(content):
        if not isinstance(block, dict):
            raise fail(where, index, f"content block {k} must be an object, got "
                                     f"{type(block).__name__}")
        if block.get("type") == "tool_result":
            if parts:
                entries.append(Entry(index, _user_message(parts, blocks), blocks=()))
                parts, blocks = [], []
            entries.append(_tool_result(block, where, index, k))
        else:
            parts.append(_user_part(block, where, index, k))
            blocks.append(block)
    if parts or not content:
        entries.append(Entry(index, _user_message(parts, blocks), blocks=()))
    return entries


def to_openai_messages(system: Any, messages: Sequence[Any]) -> list[dict[str, Any]]:
    """An Anthropic run (``system``, ``messages``) as OpenAI chat messages (the
    conversion in the module docstring). Raises :class:`TraceError` (a
    ``ValueError``) naming the message index and what is wrong. The messages are
    plain OpenAI ones: without the ``_anthropic`` key the reader's turns keep."""
    return [{k: v for k, v in e.message.items() if k != KEPT}
            for e in message_entries(system, messages, "messages")]


def read(data: Any, where: str) -> Trace:
    """Read one ``{"system", "messages", "tools"?}`` run."""
    entries = message_entries(data.get("system"), data.get("messages"), where)
    return build_trace(entries, where=where, source=FORMAT,
                       tools=tools_from(data.get("tools"), where))


@hookimpl
def register_trace_readers(register: Callable[..., None]) -> None:
    """Register ``anthropic-messages``."""
    register(FORMAT, detect, read)
