"""Message lists in the shapes people print or send: plain text and provider APIs."""

from __future__ import annotations

import copy
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from turnpress.core.breakpoints import BreakpointError, breakpoint_problem
from turnpress.core.compression import Breakpoint, render_with_breakpoints
from turnpress.core.errors import a_or_an
from turnpress.core.message_checks import content_part_problem
from turnpress.core.model import INSTRUCTION_ROLES, Message

if TYPE_CHECKING:
    from turnpress.core.trace import Trace

__all__ = [
    "MAX_ANTHROPIC_BREAKPOINTS",
    "alternating",
    "anthropic_breakpoints",
    "format_text",
    "kept_content",
    "part_text",
    "prompt_with_breakpoints",
    "render_with_breakpoints",
    "request_tools",
    "to_anthropic",
    "to_openai",
]

def part_text(part: Any) -> str:
    """One content part (or Anthropic block) as text: its ``text``, else a marker, an
    image as ``[image]`` and any other part as ``[its type]`` (``[document]``,
    ``[search_result]``...). The anthropic-messages reader shows a block that the
    OpenAI shape cannot hold as this marker, so :func:`to_anthropic` can tell that a
    strategy left it as it was."""
    if isinstance(part, Mapping) and isinstance(part.get("text"), str):
        return part["text"]
    kind = part.get("type", "part") if isinstance(part, Mapping) else "part"
    return f"[{'image' if 'image' in str(kind) else kind}]"


def _content_text(content: Any) -> str:
    """A message content as text: a string as is, ``None`` as ``""``, content parts
    (an imported transcript's) as their texts, an image as ``[image]`` (:func:`part_text`)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(map(part_text, content))


def format_text(messages: Sequence[Message]) -> str:
    """Messages as readable text: a ``===== [i] role =====`` header before each content.

    A transcript's tool message names its call (``===== [3] tool (call_1) =====``)
    and an assistant message lists its tool calls after its text, one
    ``-> tool call ID: NAME ARGUMENTS`` line each. Other keys are not shown
    (``turnpress.core.message_keys.left_out_keys(messages, "text")`` lists them).
    """
    blocks = []
    for i, message in enumerate(messages, 1):
        role = message["role"]
        call_id = message.get("tool_call_id")  # type: ignore[attr-defined]
        head = f"{role} ({call_id})" if role == "tool" and call_id is not None else role
        body = _content_text(message.get("content"))
        calls = message.get("tool_calls") or []  # type: ignore[attr-defined]
        lines = [body] if body or not calls else []
        for call in calls:
            function = call.get("function", {}) if isinstance(call, Mapping) else {}
            lines.append(f"-> tool call {call.get('id', '')}: {function.get('name', '')} "
                         f"{function.get('arguments', '')}")
        blocks.append(f"===== [{i}] {head} =====\n" + "\n".join(lines))
    return "\n\n".join(blocks) + "\n"


#: the fields of an OpenAI chat-completions message, by role, plus those that
#: OpenAI-compatible APIs take back: LiteLLM's ``thinking_blocks`` (Anthropic thinking
#: in this shape), the ``reasoning_content`` (DeepSeek, vLLM, Qwen) or ``reasoning``
#: (OpenRouter) of a reasoning model, which some require back with its tool calls, and
#: a tool message's ``name`` (Mistral, Gemini's OpenAI endpoint)
OPENAI_FIELDS: dict[str, frozenset[str]] = {
    "system": frozenset({"role", "content", "name"}),
    "developer": frozenset({"role", "content", "name"}),
    "user": frozenset({"role", "content", "name"}),
    "assistant": frozenset({"role", "content", "name", "tool_calls", "refusal", "audio",
                            "function_call", "thinking_blocks", "reasoning_content",
                            "reasoning"}),
    "tool": frozenset({"role", "content", "tool_call_id", "name"}),
}


def _openai_call(call: Any) -> Any:
    """A tool call with an object ``arguments`` as the JSON string the API wants."""
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping) or isinstance(function.get("arguments"), str) \
            or "arguments" not in function:
        return call
    arguments = json.dumps(function["arguments"], ensure_ascii=False)
    return {**call, "function": {**function, "arguments": arguments}}


def to_openai(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The ``messages`` list of an OpenAI chat-completions request: each message a
    copy of its fields (a replayed transcript's ``tool_calls``, ``tool_call_id``,
    ``thinking_blocks``... stay exactly as they were sent). Keys that are no field
    of the API's message are left out: what logging libraries add (``extra``,
    ``provider_specific_fields``...) and the ``_anthropic`` / ``_responses`` keys
    readers keep for :func:`to_anthropic` and ``to_responses``; the trace keeps them
    (``turnpress.core.message_keys.left_out_keys(messages, "openai")`` lists those
    left out). A tool call's ``arguments`` given as an object is sent as its JSON
    string."""
    out = []
    for m in messages:
        fields = OPENAI_FIELDS.get(m.get("role"))  # type: ignore[arg-type]
        message = {k: v for k, v in m.items()
                   if k not in _KEPT_KEYS and (fields is None or k in fields)}
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            message["tool_calls"] = [_openai_call(c) for c in calls]
        out.append(message)
    return out


def request_tools(tools: Mapping[str, Any], shape: str) -> list[dict[str, Any]]:
    """The tools a transcript's request defined (each :class:`~turnpress.core.model.Tool`
    with a kept ``schema``), in a provider's ``shape``: ``openai`` (chat completions:
    ``{"type": "function", "function": {...}}``), ``responses`` (``{"type": "function",
    "name", ...}``) or ``anthropic`` (``{"name", "description", "input_schema"}``).
    A definition given in that shape comes back as it was."""
    out = []
    for tool in tools.values():
        schema = getattr(tool, "schema", None)
        if schema is None:
            continue
        parameters = schema.get("parameters", schema.get("input_schema"))
        if shape == "anthropic":
            if "input_schema" in schema:
                out.append(dict(schema))
                continue
            body = {"name": tool.name, "description": schema.get("description", ""),
                    "input_schema": parameters or {"type": "object", "properties": {}}}
            out.append({k: v for k, v in body.items() if v != "" or k != "description"})
            continue
        function = ({k: v for k, v in schema.items() if k != "type"} if "input_schema"
                    not in schema else {"name": tool.name, **({"description": schema[
                        "description"]} if schema.get("description") else {}),
                        "parameters": parameters})
        out.append({"type": "function", "function": function} if shape == "openai"
                   else {"type": "function", **function})
    return out


# -- Anthropic ------------------------------------------------------------------------------

MAX_ANTHROPIC_BREAKPOINTS = 4
"""The API accepts at most four ``cache_control`` markers per request."""

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}

#: a tool message's key for its Anthropic tool_result's block-list content and
#: ``is_error`` (set by the anthropic-messages reader, dropped by :func:`to_openai`)
ANTHROPIC_KEPT = "_anthropic"
#: keys readers add to a message for the way back to their own format (the
#: Responses items a message came from: ``turnpress.core.responses.KEPT``)
_KEPT_KEYS = (ANTHROPIC_KEPT, "_responses")



def anthropic_breakpoints(messages: Sequence[Message],
                          breakpoints: Iterable[Breakpoint]) -> list[Breakpoint]:
    """The cache breakpoints the Anthropic shape of ``messages`` really carries.

    ``breakpoints`` are a strategy's ``(message_index, offset | None)`` pairs
    (see ``Strategy.cache_breakpoints``), each index one of ``messages``; anything
    else (wrong types, a negative offset, an index out of range) raises
    :class:`~turnpress.core.breakpoints.BreakpointError`, a ``ValueError``, as
    :func:`~turnpress.core.breakpoints.check_breakpoints` does for ``render`` (so
    ``compare --cache anthropic`` fails such a strategy as ``render -f anthropic``
    does, instead of counting it without its marks). Ones that would mark an empty
    text are dropped, an offset at the end of a message becomes ``None``, an offset
    of 0 becomes the end of the message before (none for the first message); the
    result is sorted, without duplicates, and keeps the last
    :data:`MAX_ANTHROPIC_BREAKPOINTS` (the longest prefixes).
    """
    breakpoints = list(breakpoints) if isinstance(breakpoints, Iterable) else breakpoints
    problem = breakpoint_problem(breakpoints, len(messages))
    if problem is not None:
        raise BreakpointError(f"cache breakpoints: {problem}")
    points: set[Breakpoint] = set()
    for index, offset in breakpoints:
        content = messages[index].get("content")  # type: ignore[attr-defined]
        if not isinstance(content, str):
            # content parts: an offset inside the first text part cuts it (a coalesced
            # view's mission, before an image the user gave), else the whole message
            if offset is not None and not 0 < offset < _leading_text_size(content):
                offset = None
        elif offset is not None and offset >= len(content):
            offset = None
        if offset is not None and offset <= 0:
            index, offset = index - 1, None
            if index < 0:
                continue
        if offset is None and not (messages[index].get("content")  # type: ignore[attr-defined]
                                   or messages[index].get("tool_calls")):  # type: ignore[attr-defined]
            continue
        points.add((index, offset))
    ordered = sorted(points, key=lambda p: (p[0], p[1] if p[1] is not None else math.inf))
    return ordered[-MAX_ANTHROPIC_BREAKPOINTS:]


def _leading_text_size(content: Any) -> int:
    """The length of the text of the first of content parts (or blocks) when it is a
    text part, else 0."""
    first = content[0] if isinstance(content, list) and content else None
    if isinstance(first, Mapping) and first.get("type") == "text" \
            and isinstance(first.get("text"), str):
        return len(first["text"])
    return 0


def _mark(blocks: list[dict[str, Any]], cuts: Sequence[int | None], at: int = 0) -> None:
    """Put ``cache_control`` markers on ``blocks`` in place: each offset of ``cuts`` cuts
    the plain text block at ``at`` (:func:`anthropic_breakpoints` keeps only offsets
    inside the first text part), the part before the cut marked; ``None``, or an offset
    that block cannot take, marks the last block."""
    offsets = [c for c in cuts if c is not None]
    first = blocks[at] if at < len(blocks) else None
    if offsets and isinstance(first, dict) and first.get("type") == "text" \
            and set(first) <= {"type", "text", "cache_control"} \
            and isinstance(first.get("text"), str) and max(offsets) < len(first["text"]):
        blocks[at:at + 1] = _blocks(first["text"], offsets)
    elif offsets:
        cuts = [None]
    if None in cuts:
        blocks[-1]["cache_control"] = dict(EPHEMERAL)


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

    Leading system (and OpenAI ``developer``) messages become ``system``; the
    others keep their role. ``breakpoints`` (a strategy's stable prefix, as
    ``Strategy.cache_breakpoints`` returns it; see :func:`render_with_breakpoints`)
    become ``cache_control: {"type": "ephemeral"}`` markers, at most four
    (:func:`anthropic_breakpoints`): a whole message is marked on its last block,
    an offset inside a message (or inside the first text part of content parts)
    splits that text into two text blocks, the first one marked. ``system`` is a
    string (``""`` when there is none) and a content is a string, unless a marker
    needs the list-of-blocks form. A system or developer message after a non-system
    one raises ``ValueError`` (the API has no system role inside the conversation).

    An imported transcript's messages (OpenAI chat shape, DESIGN §10) get their
    Anthropic blocks back: an assistant message's ``thinking_blocks`` (extended
    thinking, kept verbatim by the reader) come first, then its text, then its
    ``tool_calls`` as ``tool_use`` blocks; each ``tool`` message becomes a
    ``tool_result`` block (with the block-list content and ``is_error`` the
    anthropic-messages reader kept under ``_anthropic``; the content only while a
    strategy left its text as it was), a user message whose blocks the reader kept
    (a document, a search result...: :func:`_kept_blocks`) gets them back on the same
    condition, an assistant message with server tool blocks (web search, MCP...) gets
    its blocks back while a strategy left its text, thinking and tool calls as they
    were (:func:`_kept_reply`; else the markers go as its text), and content parts
    become text / image blocks.

    The API wants user and assistant messages to alternate, so consecutive
    messages of one role (tool results and the user text after them, or two
    assistant messages a strategy wrote in a row) are merged into one message,
    their blocks in order; in a user message the ``tool_result`` blocks go first,
    as the API requires, then the other blocks in order. A key the Anthropic shape has
    no place for (``name``, ``reasoning_content``...) is left out
    (``turnpress.core.message_keys.left_out_keys(messages, "anthropic")`` lists them).
    """
    cuts: dict[int, list[int | None]] = {}
    for index, offset in anthropic_breakpoints(messages, breakpoints):
        cuts.setdefault(index, []).append(offset)
    lead = 0
    while lead < len(messages) and messages[lead]["role"] in INSTRUCTION_ROLES:
        lead += 1
    system_blocks: list[dict[str, Any]] = []
    as_given = False  # a system prompt given as several blocks comes back as they were
    for i in range(lead):
        content = messages[i]["content"]
        original = _kept_blocks(messages[i], content)
        if original and None not in original and all(c is None for c in cuts.get(i, [])):
            if i in cuts:
                original[-1]["cache_control"] = dict(EPHEMERAL)
            system_blocks.extend(original)
            as_given = True
            continue
        text = _content_text(content)
        if text or i in cuts:
            system_blocks.extend(_blocks(text, cuts.get(i, [])))
    system: str | list[dict[str, Any]]
    if as_given or any("cache_control" in b for b in system_blocks):
        system = system_blocks
    else:
        system = "\n\n".join(b["text"] for b in system_blocks)
    out: list[dict[str, Any]] = []
    for i in range(lead, len(messages)):
        m = messages[i]
        role, content = m["role"], m.get("content")  # type: ignore[attr-defined]
        if role in INSTRUCTION_ROLES:
            raise ValueError(f"message {i} is {a_or_an(role)} message after the conversation "
                             f"started; Anthropic has no system role there")
        if role == "tool":
            block = {"type": "tool_result",
                     "tool_use_id": m.get("tool_call_id", ""),  # type: ignore[attr-defined]
                     "content": _anthropic_blocks(content, i) if isinstance(content, list)
                     else (content or "")}
            original = _kept_blocks(m, content)
            if original is not None:
                block["content"] = original
            kept = m.get(ANTHROPIC_KEPT)  # type: ignore[attr-defined]
            if isinstance(kept, Mapping) and isinstance(kept.get("is_error"), bool):
                block["is_error"] = kept["is_error"]
            if i in cuts:
                block["cache_control"] = dict(EPHEMERAL)
            out.append({"role": "user", "content": [block]})
            continue
        calls = m.get("tool_calls") or []  # type: ignore[attr-defined]
        thinking = m.get("thinking_blocks") or []  # type: ignore[attr-defined]
        original = (_kept_reply(m, content, calls, thinking, i) if role == "assistant"
                    else _kept_blocks(m, content))
        if original:
            if i in cuts:
                _mark(original, cuts[i])
            out.append({"role": role, "content": original})
            continue
        if isinstance(content, str) and not calls and not thinking:
            out.append({"role": role,
                        "content": _blocks(content, cuts[i]) if i in cuts else content})
            continue
        blocks = [dict(b) for b in thinking]
        blocks.extend(_anthropic_blocks(content, i) if isinstance(content, list)
                      else [{"type": "text", "text": content}] if content else [])
        blocks.extend(_tool_use(call, i) for call in calls)
        if i in cuts and blocks:
            _mark(blocks, cuts[i], len(thinking))
        out.append({"role": role, "content": blocks})
    return system, alternating(out)


def kept_content(message: Mapping[str, Any]) -> list[Any] | None:
    """The Anthropic blocks the anthropic-messages reader kept for ``message`` under
    :data:`ANTHROPIC_KEPT` (a tool_result's content, a user or assistant message's
    blocks), or None."""
    kept = message.get(ANTHROPIC_KEPT)
    original = kept.get("content") if isinstance(kept, Mapping) else None
    return original if isinstance(original, list) else None


def _kept_blocks(message: Message, content: Any) -> list[dict[str, Any]] | None:
    """A copy of the Anthropic blocks the anthropic-messages reader kept for ``message``
    (:func:`kept_content`), if the strategy left its text as it was (``content``: each
    kept block that the OpenAI shape cannot hold shows as its marker, :func:`part_text`);
    else ``None``."""
    original = kept_content(message)
    if original is not None and _content_text(original) == _content_text(content):
        return copy.deepcopy(original)
    return None


#: the blocks of an assistant message that its OpenAI shape holds apart from its text
_REPLY_APART = ("thinking", "redacted_thinking", "tool_use")


def _kept_reply(message: Message, content: Any, calls: Sequence[Any],
                thinking: Sequence[Any], index: int) -> list[dict[str, Any]] | None:
    """A copy of the Anthropic blocks the reader kept for an assistant message (one with
    server tool blocks, which show as markers in its text) if the strategy left it as
    it was: the same text (:func:`_kept_blocks`), thinking blocks and tool calls; else
    ``None``."""
    original = kept_content(message)
    if original is None:
        return None
    said = [b for b in original if b.get("type") not in _REPLY_APART]
    if _content_text(said) != _content_text(content):
        return None
    if [b for b in original if b.get("type") in _REPLY_APART[:2]] != list(thinking):
        return None
    uses = [{"type": "tool_use", "id": str(b.get("id", "")), "name": b.get("name"),
             "input": b.get("input", {})} for b in original if b.get("type") == "tool_use"]
    if uses != [_tool_use(call, index) for call in calls]:
        return None
    return copy.deepcopy(original)


def alternating(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` (Anthropic messages) with each run of one role merged into one
    message (see :func:`to_anthropic`); a message alone in its run is left as it is."""
    out: list[dict[str, Any]] = []
    runs: list[list[dict[str, Any]]] = []
    for m in messages:
        if runs and runs[-1][0]["role"] == m["role"]:
            runs[-1].append(m)
        else:
            runs.append([m])
    for run in runs:
        if len(run) == 1:
            out.append(run[0])
            continue
        blocks: list[dict[str, Any]] = []
        for m in run:
            content = m["content"]
            if isinstance(content, str):
                if content:
                    blocks.append({"type": "text", "text": content})
            else:
                blocks.extend(content)
        results = [b for b in blocks if b.get("type") == "tool_result"]
        if results and run[0]["role"] == "user":
            blocks = results + [b for b in blocks if b.get("type") != "tool_result"]
        out.append({"role": run[0]["role"], "content": blocks})
    return out


def _anthropic_blocks(parts: Sequence[Any], index: int) -> list[dict[str, Any]]:
    """OpenAI content parts as Anthropic blocks (text, and images from ``image_url``)."""
    blocks: list[dict[str, Any]] = []
    for k, part in enumerate(parts):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind in ("text", "image_url"):  # the parts made into blocks: checked as a
            problem = content_part_problem(part)  # strategy's are (check_messages)
            if problem is not None:
                raise ValueError(f"message {index}: content part {k} {part!r:.80} {problem}")
        if kind == "text":
            blocks.append({"type": "text", "text": part["text"]})
        elif kind == "image_url":
            url = part["image_url"]["url"]
            head, _, data = url.partition(";base64,")
            if url.startswith("data:") and data:
                blocks.append({"type": "image", "source": {
                    "type": "base64", "media_type": head[len("data:"):], "data": data}})
            else:
                blocks.append({"type": "image", "source": {"type": "url", "url": url}})
        else:
            raise ValueError(f"message {index}: content part type {kind!r} has no Anthropic "
                             f"block (text, image_url)")
    return blocks


def _tool_use(call: Mapping[str, Any], index: int) -> dict[str, Any]:
    """An OpenAI tool call as a ``tool_use`` block (its arguments must be a JSON object)."""
    function = call.get("function") or {}
    raw = function.get("arguments") or "{}"
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        arguments = None
    if not isinstance(arguments, dict):
        raise ValueError(f"message {index}: the arguments of tool call {call.get('id')!r} are "
                         f"not a JSON object, which an Anthropic tool_use input must be: "
                         f"{str(raw)[:80]!r}")
    return {"type": "tool_use", "id": call.get("id", ""), "name": function.get("name", ""),
            "input": arguments}


# -- prompts with their cache breakpoints -------------------------------------------------


def prompt_with_breakpoints(trace: Trace, n: int, compression: Any = True,
                            template_dirs: Iterable[str | os.PathLike[str]] = ()
                            ) -> tuple[list[Message], list[Breakpoint]]:
    """:func:`render_with_breakpoints` for the prompt of turn ``n`` of ``trace``
    (the messages are ``trace.prompt(n, compression)``)."""
    return render_with_breakpoints(**trace.prompt_arguments(n), compression=compression,
                                   template_dirs=template_dirs)
