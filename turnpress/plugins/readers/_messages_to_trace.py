"""The mapping every transcript reader shares (DESIGN §10): OpenAI-chat messages -> Trace.

A reader turns its format into :class:`Entry` objects (one OpenAI-chat message as
sent, with its index in the source file, its billed usage and any error flag the
format recorded beside it) and calls :func:`build_trace`:

- the first system message (or ``developer`` message: OpenAI's name for it with
  newer models) is the system prompt, the first user message the mission; every
  message before the first assistant message is ``Trace.preamble``;
- each assistant message starts a turn: ``program`` and ``raw_response`` are its
  text (``""`` when it only calls tools); its tool calls are ``Turn.tool_calls``,
  each argument string parsed from JSON (an object becomes ONE argument, the dict:
  ``args=({"command": "ls"},)``; any other JSON value is one argument too; ``""``
  is no argument; invalid JSON is kept as the raw string, one argument) and
  ``result`` = the content of the tool message answering it (``None`` if none did);
- the tool / user / system / developer messages after it, until the next
  assistant message, are its feedback; the text of the user, system and developer
  ones is ``Turn.prints``;
- OpenAI's legacy ``function_call`` / ``function`` messages are refused with an
  error that says how to write them as ``tool_calls`` / ``tool`` messages;
- ``Turn.messages`` = the assistant message + its feedback, verbatim;
- a turn fails (``Turn.failed``) when its feedback reports an error. Reasons:
  ``nonzero_returncode`` (a ``<returncode>N</returncode>`` with N != 0, as
  mini-swe-agent writes), ``tool_error`` (an error flag of the format: Anthropic's
  ``is_error``), ``exception`` (a Python traceback in a feedback message without a
  return code, or mini-swe-agent's ``exception_info``); the message is the return
  code and the output's last line, the flagged text, or the exception's last line;
- memory is empty; ``result`` of a succeeded turn is ``None``;
  ``max_turns`` = the number of turns (a replayed transcript has no turns-left line).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from turnpress.core.compression import PART_SHAPE, content_part_problem
from turnpress.core.errors import a_or_an, quote
from turnpress.core.model import (
    INSTRUCTION_ROLES,
    MESSAGE_ROLES,
    Failure,
    Tool,
    ToolCall,
    Turn,
    Usage,
)
from turnpress.core.trace import Trace, TraceError

ROLES = MESSAGE_ROLES
FAILURE_MESSAGE_LIMIT = 500

_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_TRACEBACK = "Traceback (most recent call last):"


@dataclass
class Entry:
    """One message as sent (OpenAI-chat shape) and where it came from."""

    index: int
    message: dict[str, Any]
    usage: Usage | None = None
    #: an error the format flagged beside the message (Anthropic ``is_error``...)
    error: Failure | None = None
    #: for a message read from Anthropic blocks, where its tool calls and results were:
    #: the content block index of each ``tool_use`` (an assistant message, in
    #: ``tool_calls`` order) or of its ``tool_result`` (a tool message), so errors speak
    #: of blocks; ``None`` for a format without blocks (errors speak of ``tool_calls``
    #: and tool messages)
    blocks: tuple[int, ...] | None = None


def fail(where: str, index: int | None, problem: str) -> TraceError:
    """``TraceError("WHERE: message N: PROBLEM")``."""
    at = f"{where}: message {index}: " if index is not None else f"{where}: "
    return TraceError(at + problem)


def text_of(content: Any) -> str:
    """The text of a message content: a string, ``None`` (``""``) or a list of parts
    (the text parts joined by newlines)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content
                         if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return str(content)


def tool_error(content: Any) -> Failure:
    """The failure of a tool result the format flags as an error (Anthropic's
    ``is_error``; an integration's failed tool message): ``tool_error``, its text
    (:func:`text_of`, cut to 500 characters) as the message."""
    text = text_of(content).strip()
    return Failure("tool_error", text[:500] or "the tool reported an error")


def _check_message(m: Any, index: int, where: str) -> str:
    if not isinstance(m, dict):
        raise fail(where, index, f"expected a JSON object with \"role\" and \"content\", "
                                 f"got {type(m).__name__} {quote(m)}")
    role = m.get("role")
    if "role" not in m:
        raise fail(where, index, "no \"role\" field")
    if role == "function" or (role == "assistant" and m.get("function_call") is not None):
        what = ("a \"function\" role message" if role == "function"
                else "an assistant \"function_call\"")
        raise fail(where, index, f"{what} is OpenAI's legacy (deprecated) function-calling "
                                 f"format, which turnpress does not read: send calls as "
                                 f"\"tool_calls\": [{{\"id\", \"type\": \"function\", "
                                 f"\"function\": {{\"name\", \"arguments\"}}}}] and each "
                                 f"result as {{\"role\": \"tool\", \"tool_call_id\", \"content\"}}")
    if role not in ROLES:
        raise fail(where, index, f"unknown role {quote(role)}; a message's role must be one of "
                                 f"{', '.join(ROLES)}")
    content = m.get("content")
    if content is not None and not isinstance(content, (str, list)):
        raise fail(where, index, f"\"content\" must be a string, a list of content parts or "
                                 f"null, got {type(content).__name__}")
    if content is None and not (role == "assistant" and m.get("tool_calls")):
        raise fail(where, index, f"{a_or_an(role)} message needs \"content\" (null is only "
                                 f"allowed on an assistant message with tool_calls)")
    if isinstance(content, list):  # the parts every strategy's messages may carry
        for k, part in enumerate(content):
            problem = content_part_problem(part)
            if problem is not None:
                raise fail(where, index, f"content part {k} {quote(part)} {problem}; "
                                         f"{PART_SHAPE}")
    return role


def parse_arguments(raw: Any) -> tuple[Any, ...]:
    """A tool call's ``arguments`` as ``ToolCall.args`` (see the module docstring)."""
    if not isinstance(raw, str):
        return () if raw is None else (raw,)
    if not raw.strip():
        return ()
    try:
        return (json.loads(raw),)
    except json.JSONDecodeError:
        return (raw,)


def _calls(m: Mapping[str, Any], index: int, where: str) -> list[tuple[str, str, Any]]:
    """``[(id, name, arguments)]`` of an assistant message."""
    raw = m.get("tool_calls")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise fail(where, index, f"\"tool_calls\" must be a list, got {type(raw).__name__}")
    out = []
    for k, call in enumerate(raw):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise fail(where, index, f"tool_calls[{k}] needs \"function\": {{\"name\", "
                                     f"\"arguments\"}}")
        out.append((str(call.get("id", "")), function["name"], function.get("arguments")))
    return out


def feedback_failure(entry: Entry) -> Failure | None:
    """The error a feedback message reports, if any (see the module docstring)."""
    if entry.error is not None:
        return entry.error
    text = text_of(entry.message.get("content"))
    found = _RETURNCODE.search(text)
    if found:
        code = int(found.group(1))
        if code == 0:
            return None
        rest = [line for line in text[found.end():].splitlines()
                if line.strip() and not line.strip().startswith("</")
                and not line.strip().startswith("<output")]
        last = f": {_clip(rest[-1].strip())}" if rest else ""
        return Failure("nonzero_returncode", f"return code {code}{last}")
    if _TRACEBACK in text:
        lines = [line.strip() for line in text[text.rindex(_TRACEBACK):].splitlines()
                 if line.strip()]
        return Failure("exception", _clip(lines[-1]))
    return None


def _clip(text: str) -> str:
    if len(text) <= FAILURE_MESSAGE_LIMIT:
        return text
    return text[: FAILURE_MESSAGE_LIMIT - 3] + "..."


def usage_from(raw: Any, where: str, index: int) -> Usage | None:
    """The billed input usage in a provider's ``usage`` object, or ``None`` without one.

    OpenAI: ``prompt_tokens`` (``prompt_tokens_details.cached_tokens`` cached);
    OpenAI Responses: ``input_tokens`` with ``input_tokens_details.cached_tokens``;
    DeepSeek: ``prompt_cache_hit_tokens`` (+ ``prompt_cache_miss_tokens``);
    Anthropic: ``input_tokens`` + ``cache_read_input_tokens`` (cached) +
    ``cache_creation_input_tokens`` (written). Each count is a non-negative integer;
    an integer-valued float (``1500.0``, as some proxies write) is taken as that
    integer, any other number (``1500.5``, negative), string or boolean is an error.
    """
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise fail(where, index, f"usage must be an object, got {type(raw).__name__}")

    def count(obj: Any, key: str, label: str | None = None) -> int:
        value = obj.get(key) if isinstance(obj, Mapping) else None
        if value is None:
            return 0
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # 1500.0: as some proxies write a count
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise fail(where, index, f"usage.{label or key} must be a non-negative integer, "
                                     f"got {quote(value)}")
        return value

    try:
        if "input_tokens" in raw and "input_tokens_details" in raw:  # OpenAI Responses
            details = raw.get("input_tokens_details")
            cached = count(details, "cached_tokens", "input_tokens_details.cached_tokens")
            return Usage(count(raw, "input_tokens"), cached)
        if "input_tokens" in raw:
            read = count(raw, "cache_read_input_tokens")
            written = count(raw, "cache_creation_input_tokens")
            return Usage(count(raw, "input_tokens") + read + written, read, written)
        if "prompt_tokens" in raw:
            details = raw.get("prompt_tokens_details")
            if isinstance(details, Mapping) and details.get("cached_tokens") is not None:
                cached = count(details, "cached_tokens", "prompt_tokens_details.cached_tokens")
            else:
                cached = count(raw, "prompt_cache_hit_tokens")
            return Usage(count(raw, "prompt_tokens"), cached)
        if "prompt_cache_hit_tokens" in raw or "prompt_cache_miss_tokens" in raw:
            hit = count(raw, "prompt_cache_hit_tokens")
            return Usage(hit + count(raw, "prompt_cache_miss_tokens"), hit)
    except ValueError as exc:
        if isinstance(exc, TraceError):
            raise
        raise fail(where, index, str(exc)) from None
    return None


def tools_from(raw: Any, where: str) -> dict[str, Tool]:
    """Tools of a request body: OpenAI ``[{"type": "function", "function": {...}}]`` or
    Anthropic ``[{"name", "description", "input_schema"}]``."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise TraceError(f"{where}: \"tools\" must be a list, got {type(raw).__name__}")
    tools: dict[str, Tool] = {}
    for k, spec in enumerate(raw):
        body = spec.get("function", spec) if isinstance(spec, dict) else None
        if not isinstance(body, dict) or not isinstance(body.get("name"), str):
            raise TraceError(f"{where}: tools[{k}] needs a \"name\" (OpenAI: "
                             f"{{\"type\": \"function\", \"function\": {{\"name\", ...}}}})")
        try:
            tools[body["name"]] = Tool.from_schema(body["name"], body)
        except (TypeError, AttributeError) as exc:
            raise TraceError(f"{where}: tools[{k}]: {exc}") from None
    return tools


def build_trace(entries: Sequence[Entry], *, where: str, source: str,
                tools: Mapping[str, Tool] | None = None,
                skipped: Iterable[Mapping[str, Any]] = (), name: str = "") -> Trace:
    """The :class:`Trace` of one transcript (the mapping in the module docstring)."""
    if not entries:
        raise fail(where, None, "empty run: the transcript has no messages")
    roles = [_check_message(e.message, e.index, where) for e in entries]
    first = next((k for k, r in enumerate(roles) if r == "assistant"), None)
    for k in range(len(entries) if first is None else first):
        if roles[k] == "tool":
            raise fail(where, entries[k].index, f"{_no_call(entries[k])}: no assistant "
                                                f"message comes before it")
    if first is None:
        raise fail(where, None, f"empty run: no assistant message among its {len(entries)} "
                                f"message(s), so there is no turn to replay")
    if first == 0:
        raise fail(where, entries[0].index, "the run starts with an assistant message; the "
                                            "system prompt or mission must come before it")
    # the system prompt and the mission are those of the preamble (a user message after
    # the first answer is that turn's feedback, not a mission: a greeting bot's run
    # starts with the assistant and has none)
    preamble = list(zip(entries[:first], roles[:first], strict=True))
    system_prompt = next((text_of(e.message.get("content")) for e, r in preamble
                          if r in INSTRUCTION_ROLES), "")
    mission = next((text_of(e.message.get("content")) for e, r in preamble if r == "user"), "")
    turns = []
    starts = [k for k, r in enumerate(roles) if r == "assistant"] + [len(entries)]
    for number, (start, end) in enumerate(pairwise(starts), 1):
        turns.append(_turn(number, entries[start], entries[start + 1: end], where,
                           last=end == len(entries)))
    return Trace(mission=mission, turns=tuple(turns), system_prompt=system_prompt,
                 max_turns=len(turns), tools=tools or {}, name=name, source=source,
                 preamble=tuple(e.message for e in entries[:first]), skipped=tuple(skipped))


def _turn(number: int, assistant: Entry, feedback: Sequence[Entry], where: str, *,
          last: bool = False) -> Turn:
    calls = _calls(assistant.message, assistant.index, where)
    first_at: dict[str, int] = {}
    for k, (call_id, _, _) in enumerate(calls):
        if call_id in first_at:
            raise fail(where, assistant.index, _shared_id(assistant, first_at[call_id], k,
                                                          call_id))
        first_at[call_id] = k
    results: dict[str, list[Any]] = {}  # call id -> its answers, in order
    for e in feedback:
        if e.message["role"] != "tool":
            continue
        call_id = e.message.get("tool_call_id")
        if not isinstance(call_id, str) or call_id not in {c[0] for c in calls}:
            made = ", ".join(repr(c[0]) for c in calls) or "none"
            raise fail(where, e.index, _not_its_call(e, call_id, assistant.index, made))
        if call_id in results:
            raise fail(where, e.index, _answered_twice(e, call_id, assistant.index))
        results.setdefault(call_id, []).append(e.message.get("content"))
    unanswered = [k for k, (call_id, _, _) in enumerate(calls) if call_id not in results]
    if unanswered and not last:
        k = unanswered[0]
        raise fail(where, assistant.index, _unanswered(assistant, k, calls[k][0]))
    tool_calls = [ToolCall(name, parse_arguments(args),
                           results[call_id].pop(0) if results.get(call_id) else None)
                  for call_id, name, args in calls]
    prints = [text_of(e.message.get("content")) for e in feedback
              if e.message["role"] in ("user", *INSTRUCTION_ROLES)]
    program = text_of(assistant.message.get("content"))
    kwargs: dict[str, Any] = {
        "memory": {}, "prints": prints, "tool_calls": tool_calls, "raw_response": program,
        "messages": [assistant.message, *(e.message for e in feedback)],
        "usage": assistant.usage}
    error = next((f for f in map(feedback_failure, feedback) if f is not None), None)
    if error is not None:
        return Turn.failed(number, program, error, **kwargs)
    return Turn.succeeded(number, program, None, **kwargs)


# -- how the pairing errors word a call and its answer: in tool_calls and tool messages, or
# -- for a message read from Anthropic blocks (Entry.blocks), in tool_use and tool_result


def _no_call(e: Entry) -> str:
    """The start of the error about a tool message (or tool_result) that answers no call."""
    if e.blocks is None:
        return "tool message with no matching call"
    return f"content block {e.blocks[0]} (tool_result) has no matching tool_use"


def _not_its_call(e: Entry, call_id: Any, assistant: int, made: str) -> str:
    if e.blocks is None:
        return (f"{_no_call(e)}: tool_call_id {quote(call_id)} is not a call of the "
                f"assistant message {assistant} (its calls: {made})")
    return (f"{_no_call(e)}: tool_use_id {quote(call_id)} is not the id of a tool_use of the "
            f"assistant message {assistant} (its tool_use ids: {made})")


def _answered_twice(e: Entry, call_id: str, assistant: int) -> str:
    if e.blocks is None:
        return (f"duplicate answer: a tool message already answered the call {quote(call_id)} "
                f"of the assistant message {assistant}")
    return (f"duplicate answer: content block {e.blocks[0]} is a second tool_result for the "
            f"tool_use {quote(call_id)} of the assistant message {assistant}")


def _shared_id(assistant: Entry, j: int, k: int, call_id: str) -> str:
    """The error about the calls ``j`` and ``k`` of an assistant message sharing an id."""
    if assistant.blocks is None:
        return (f"duplicate tool call id {quote(call_id)}: tool_calls[{j}] and tool_calls[{k}] "
                f"share it; each call needs its own id, which its tool message answers")
    return (f"duplicate tool_use id {quote(call_id)}: content blocks {assistant.blocks[j]} and "
            f"{assistant.blocks[k]} share it; each tool_use needs its own id, which its "
            f"tool_result's tool_use_id answers")


def _unanswered(assistant: Entry, k: int, call_id: str) -> str:
    """The error about the call ``k`` of an assistant message that nothing answers."""
    if assistant.blocks is None:
        return (f"tool_calls[{k}] (id {quote(call_id)}) is never answered: no tool message with "
                f"its tool_call_id follows before the next assistant message, and provider "
                f"APIs refuse such a list; add its tool message (its result, or an error)")
    return (f"content block {assistant.blocks[k]} (tool_use {quote(call_id)}) is never "
            f"answered: no tool_result with its tool_use_id follows before the next assistant "
            f"message, and the API refuses such a list; add its tool_result (its result, or "
            f"an error with \"is_error\": true)")


def looks_anthropic(data: Any) -> bool:
    """Whether a JSON object is an Anthropic Messages run rather than an OpenAI one:
    a top-level ``system``, tool_use/tool_result blocks, or ``input_schema`` tools,
    and no ``tool`` role (OpenAI's) inside ``messages``. A system (or developer) role
    inside ``messages`` is OpenAI's too, unless the rest says Anthropic: then the
    Anthropic reader says where that system prompt goes."""
    if not isinstance(data, dict) or "messages" not in data or "trajectory_format" in data:
        return False
    messages = data["messages"]
    if isinstance(messages, list) and any(isinstance(m, dict) and m.get("role") == "tool"
                                          for m in messages):
        return False
    if "system" in data:
        return True
    tools = data.get("tools")
    if isinstance(tools, list) and any(isinstance(t, dict) and "input_schema" in t
                                       for t in tools):
        return True
    if isinstance(messages, list):
        for m in messages:
            content = m.get("content") if isinstance(m, dict) else None
            if isinstance(content, list) and any(
                    isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result")
                    for b in content):
                return True
    return False
