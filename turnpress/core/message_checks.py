"""Whether a strategy's messages are what the provider shapes can carry.

:func:`check_messages` is the one check of every prompt a strategy returns (``render``,
``compress``, ``compare``); :func:`content_part_problem` is its rule for one content
part, which the transcript readers apply too, so that a run they read gives every
strategy messages that pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import chain, repeat
from itertools import compress as select
from operator import eq, is_
from typing import Any

from turnpress.core.breakpoints import strategy_origin
from turnpress.core.model import MESSAGE_ROLES, Message

__all__ = ["MESSAGE_SHAPE", "PART_SHAPE", "check_messages", "check_prompt",
           "content_part_problem"]

_ROLE_SET = frozenset(MESSAGE_ROLES)
_DICT = frozenset({dict})
_STR = frozenset({str})
_CONTENT = frozenset({str, list, type(None)})
_ASSISTANT = frozenset({"assistant"})
_TEXT = "text"
_IMAGE = "image_url"

#: Anthropic Messages blocks, which a strategy's messages (the OpenAI chat shape) hold
#: in another form: ``to_anthropic`` makes these blocks from it
_ANTHROPIC_BLOCKS = {
    "tool_use": "an assistant message's 'tool_calls'",
    "tool_result": "a 'tool' message with its 'tool_call_id'",
    "image": "an 'image_url' part",
    "document": "a 'file' part",
    "thinking": "an assistant message's 'thinking_blocks'",
    "redacted_thinking": "an assistant message's 'thinking_blocks'",
}

#: what :func:`check_messages` accepts, as its errors say it
MESSAGE_SHAPE = (
    "each must be {'role': 'system'|'developer'|'user'|'assistant'|'tool', "
    "'content': str or a list of content parts}; a 'tool' message also has a string "
    "'tool_call_id', and only an assistant message with 'tool_calls' may have "
    "'content': None (or none)")
PART_SHAPE = (
    "a content part is {'type': 'text', 'text': str}, {'type': 'image_url', "
    "'image_url': {'url': str}} or another OpenAI content part: a dict with a 'type' "
    "string (input_audio, file...)")


def content_part_problem(part: Any) -> str | None:
    """What is wrong with one content part (of a message's list content), or ``None``
    (the rule :func:`check_messages` and the transcript readers share; see
    :data:`PART_SHAPE`).

    The provider conversions read a ``text`` part's ``text`` and an ``image_url``
    part's ``image_url.url`` (``to_anthropic`` makes blocks of them); any other part
    with a ``type`` (an OpenAI chat or Responses part of a replayed transcript: audio,
    a file, a refusal) is carried as given by ``to_openai`` and ``to_responses``, and
    ``to_anthropic`` says that it has no Anthropic block for it.
    """
    if not isinstance(part, Mapping):
        return f"is not a dict but {type(part).__name__}"
    kind = part.get("type")
    if not isinstance(kind, str) or not kind:
        return "has no 'type' string"
    if kind == _TEXT:
        if not isinstance(part.get("text"), str):
            return "is a 'text' part without a string 'text'"
    elif kind == _IMAGE:
        image = part.get("image_url")
        if not isinstance(image, Mapping) or not isinstance(image.get("url"), str):
            return "is an 'image_url' part without 'image_url': {'url': str}"
    elif kind in _ANTHROPIC_BLOCKS:
        return (f"is an Anthropic {kind!r} block; messages are in the OpenAI chat shape "
                f"(use {_ANTHROPIC_BLOCKS[kind]})")
    return None


def _message_problem(m: Any) -> str | None:
    """What is wrong with one message, and what it must be, or ``None``."""
    problem = _what_is_wrong(m)
    if problem is None or problem.startswith("content part "):
        return problem
    return f"{problem}; {MESSAGE_SHAPE}"


def _what_is_wrong(m: Any) -> str | None:
    if not isinstance(m, Mapping):
        return f"it is not a dict but {type(m).__name__}"
    role = m.get("role")
    if not isinstance(role, str) or role not in _ROLE_SET:
        return f"role {role!r:.40} is not one of {', '.join(MESSAGE_ROLES)}"
    if role == "tool" and not isinstance(m.get("tool_call_id"), str):
        return "a 'tool' message needs a string 'tool_call_id' (the id of the call it answers)"
    content = m.get("content")
    if isinstance(content, str):
        return None
    if content is None:
        if role == "assistant" and m.get("tool_calls"):
            return None
        what = "'content' is None" if "content" in m else "it has no 'content'"
        return f"{what}, which only an assistant message with 'tool_calls' may lack"
    if not isinstance(content, list):
        return (f"'content' is not a string or a list of content parts but "
                f"{type(content).__name__}")
    for k, part in enumerate(content):
        problem = content_part_problem(part)
        if problem is not None:
            return f"content part {k} {part!r:.80} {problem}; {PART_SHAPE}"
    return None


def _plainly_valid(messages: list[Any]) -> bool:
    """Whether ``messages`` (dicts) pass :func:`_message_problem`, found in C-speed passes
    over the shapes strategies return (``False`` when in doubt: the caller then checks
    message by message)."""
    try:
        role_set = set(map(dict.get, messages, repeat("role")))
    except TypeError:  # an unhashable role: not one of them
        return False
    if not role_set <= _ROLE_SET:
        return False
    kinds = set(map(type, map(dict.get, messages, repeat("content"))))
    if kinds <= _STR and "tool" not in role_set:  # the common case
        return True
    if not kinds <= _CONTENT:
        return False
    roles = list(map(dict.get, messages, repeat("role")))
    contents = list(map(dict.get, messages, repeat("content")))
    if "tool" in role_set and not set(map(type, map(dict.get, select(
            messages, map(eq, roles, repeat("tool"))), repeat("tool_call_id")))) <= _STR:
        return False
    if type(None) in kinds:
        empty = list(select(messages, map(is_, contents, repeat(None))))
        if not (set(map(dict.get, empty, repeat("role"))) <= _ASSISTANT
                and all(map(dict.get, empty, repeat("tool_calls")))):
            return False
    if list in kinds:
        parts = list(chain.from_iterable(c for c in contents if type(c) is list))
        if not set(map(type, parts)) <= _DICT:
            return False
        types = list(map(dict.get, parts, repeat("type")))
        try:
            kinds_of_parts = set(types)
        except TypeError:
            return False
        if not set(map(type, kinds_of_parts)) <= _STR or "" in kinds_of_parts \
                or not kinds_of_parts.isdisjoint(_ANTHROPIC_BLOCKS):
            return False
        if _TEXT in kinds_of_parts and not set(map(type, map(dict.get, select(
                parts, map(eq, types, repeat(_TEXT))), repeat(_TEXT)))) <= _STR:
            return False
        if _IMAGE in kinds_of_parts and any(map(content_part_problem, select(
                parts, map(eq, types, repeat(_IMAGE))))):
            return False
    return True


def check_messages(messages: Any, strategy: Any) -> list[Message]:
    """Return ``messages`` if they are a list of messages the provider shapes can carry,
    else raise a ``TypeError`` naming the strategy (and, for a third-party one, its
    plugin), the first bad message's index and what is wrong with it.

    A message is ``{"role", "content"}``: a role of ``MESSAGE_ROLES`` (system, developer,
    user, assistant, tool) and a string content. Messages replayed from an imported
    transcript (DESIGN §10) may also have list-of-parts content (each part a dict with
    a ``type`` string; a ``text`` part has a string ``text``, an ``image_url`` part an
    ``image_url: {"url": str}``), ``content: None`` on an assistant message with
    ``tool_calls``, and ``role: "tool"`` with a string ``tool_call_id``: what
    ``to_openai``, ``to_anthropic`` and ``to_responses`` convert (see
    :data:`MESSAGE_SHAPE`).
    """
    if not isinstance(messages, list):
        raise TypeError(f"{strategy_origin(strategy)} returned {type(messages).__name__}, "
                        f"not a list of messages")
    if set(map(type, messages)) <= _DICT and _plainly_valid(messages):
        return messages
    for i, m in enumerate(messages):
        problem = _message_problem(m)
        if problem is not None:
            raise TypeError(f"{strategy_origin(strategy)} returned a bad message at index "
                            f"{i}: {m!r:.200}: {problem}")
    return messages


def check_prompt(messages: Any, strategy: Any) -> list[Message]:
    """:func:`check_messages` of a whole prompt, which also needs at least one message: a
    strategy that returns none raises a ``TypeError`` naming it (and, for a third-party
    one, its plugin), as ``compare`` lists it (``render``, ``compress``, ``Compressor``
    check this before the strategy's cache breakpoints)."""
    if type(messages) is list and not messages:
        raise TypeError(f"{strategy_origin(strategy)} returned no message; a prompt needs at "
                        f"least one")
    return check_messages(messages, strategy)
