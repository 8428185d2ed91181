"""Which keys of a prompt's messages each output format of ``turnpress render`` carries.

A message keeps every key a transcript gave it (``name``, ``reasoning_content``, a
logger's ``x_custom``...). ``-f json`` prints the messages as they are; the other
formats are shapes with fields of their own, and leave out a key they have no place
for (:func:`~turnpress.core.providers.to_openai` keeps the fields of an OpenAI chat
message; :func:`~turnpress.core.providers.to_anthropic`,
:func:`~turnpress.core.responses.to_responses` and
:func:`~turnpress.core.providers.format_text` keep what they show or re-encode).
Nothing the trace holds is dropped silently: :class:`LeftOut` gathers, prompt by
prompt, the keys a format leaves out, and says for each which formats keep it, in one
warning line a key (``render`` prints them on stderr).

What a format re-encodes is carried, not left out: ``tool_calls`` (``tool_use``
blocks, ``function_call`` items, ``-> tool call`` lines), ``tool_call_id``
(``tool_result`` blocks, ``function_call_output`` items, the text's header),
``thinking_blocks`` in the Anthropic shape, and a tool message's ``name`` when it is
the name of the call it answers (that call carries it). A key whose value is
``None`` holds nothing to lose. The keys readers keep for the way back to their own
format (``_anthropic``, ``_responses``) are turnpress's, not the transcript's: each
format uses what it can of them, and they are never reported.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from turnpress.core.errors import quote
from turnpress.core.model import INSTRUCTION_ROLES
from turnpress.core.providers import ANTHROPIC_KEPT, OPENAI_FIELDS
from turnpress.core.responses import KEPT as RESPONSES_KEPT

__all__ = ["FORMATS", "LeftOut", "carries", "left_out_keys"]

#: the formats of ``turnpress render -f``, in the order a warning names those keeping a key
FORMATS = ("text", "openai", "anthropic", "responses", "json")
#: the keys readers keep for the way back to their own format: never reported
_READERS_KEYS = (ANTHROPIC_KEPT, RESPONSES_KEPT)
#: why each format leaves a key out, in a warning
_WHY = {"text": "the text view shows a message's role, content and tool calls only",
        "openai": "it is no field of an OpenAI chat message",
        "anthropic": "an Anthropic Messages request has no place for it",
        "responses": "an OpenAI Responses request has no place for it"}
#: the keys each format shows or re-encodes, per role (None: any other role)
_CARRIED: dict[str, dict[str | None, frozenset[str]]] = {
    "text": {None: frozenset({"role", "content", "tool_calls"}),
             "tool": frozenset({"role", "content", "tool_calls", "tool_call_id"})},
    "anthropic": {None: frozenset({"role", "content", "tool_calls", "thinking_blocks"}),
                  "tool": frozenset({"role", "content", "tool_call_id"}),
                  **{role: frozenset({"role", "content"}) for role in INSTRUCTION_ROLES}},
    "responses": {None: frozenset({"role", "content", "tool_calls"}),
                  "tool": frozenset({"role", "content", "tool_call_id"})},
}


def _call_names(messages: Sequence[Mapping[str, Any]]) -> dict[Any, Any]:
    """The function name of each tool call of ``messages``, by its id."""
    names = {}
    for m in messages:
        calls = m.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping):
                names[call.get("id")] = call["function"].get("name")
    return names


def carries(fmt: str, message: Mapping[str, Any], key: str,
            call_names: Mapping[Any, Any] | None = None) -> bool:
    """Whether format ``fmt`` (one of :data:`FORMATS`) carries ``message``'s ``key``:
    shows it, sends it, or re-encodes it (see the module docstring). ``call_names`` (the
    name of each tool call of the prompt, by id) tells whether a tool message's
    ``name`` is its call's."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {quote(fmt)}; the formats are {', '.join(FORMATS)}")
    if fmt == "json" or key in _READERS_KEYS:
        return True
    role = message.get("role")
    if fmt == "openai":
        fields = OPENAI_FIELDS.get(role)  # type: ignore[arg-type]
        return fields is None or key in fields
    if role == "tool" and key == "name" and call_names is not None \
            and message.get("tool_call_id") in call_names \
            and call_names[message.get("tool_call_id")] == message.get(key):
        return True
    rules = _CARRIED[fmt]
    return key in rules.get(role, rules[None])  # type: ignore[arg-type]


def left_out_keys(messages: Sequence[Mapping[str, Any]], fmt: str) -> dict[str, int]:
    """The keys of ``messages`` that format ``fmt`` leaves out (:func:`carries`), each
    with the number of messages holding it (a key whose value is ``None`` holds
    nothing), in the order they first come."""
    out: dict[str, int] = {}
    names = _call_names(messages)
    for m in messages:
        for key, value in m.items():
            if value is not None and not carries(fmt, m, key, names):
                out[key] = out.get(key, 0) + 1
    return out


def _is_json(value: Any) -> bool:
    """Whether ``-f json`` can print ``value`` (a plugin strategy's message may hold
    anything)."""
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


class LeftOut:
    """The message keys format ``fmt`` leaves out, gathered over prompts (:meth:`add`),
    and for each the formats that keep it for every message holding it: one warning
    line a key (:meth:`warnings`)."""

    def __init__(self, fmt: str) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"unknown format {quote(fmt)}; the formats are "
                             f"{', '.join(FORMATS)}")
        self.fmt = fmt
        #: key -> the number of messages holding it that the format leaves out
        self.counts: dict[str, int] = {}
        #: key -> the formats that carry it in every one of those messages
        self.kept_by: dict[str, list[str]] = {}

    def add(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Gather the keys one prompt's ``messages`` hold that the format leaves out."""
        names = _call_names(messages)
        for m in messages:
            for key, value in m.items():
                if value is None or carries(self.fmt, m, key, names):
                    continue
                self.counts[key] = self.counts.get(key, 0) + 1
                others = [f for f in FORMATS if f != self.fmt and carries(f, m, key, names)
                          and (f != "json" or _is_json(value))]
                self.kept_by[key] = [f for f in self.kept_by.get(key, others) if f in others]

    def warnings(self) -> list[str]:
        """``warning: -f FORMAT leaves out the message key 'KEY' (N messages): ...; -f X
        and -f json keep it``, one line a key, in the order the keys came."""
        lines = []
        for key, count in self.counts.items():
            keepers = [f"-f {f}" for f in self.kept_by[key]]
            kept = ("no format keeps it (its value is no JSON value)" if not keepers else
                    f"{keepers[0]} keeps it" if len(keepers) == 1 else
                    f"{', '.join(keepers[:-1])} and {keepers[-1]} keep it")
            lines.append(f"warning: -f {self.fmt} leaves out the message key {quote(key)} "
                         f"({count} message{'' if count == 1 else 's'}): "
                         f"{_WHY[self.fmt]}; {kept}")
        return lines
