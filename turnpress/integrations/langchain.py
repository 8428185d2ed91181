"""LangChain adapter: compress ``BaseMessage`` lists (``pip install 'turnpress[langchain]'``).

LangChain agents keep their state as ``langchain_core`` messages. This module
converts them to the OpenAI chat shape turnpress reads and back, with
langchain-core's own converters (``convert_to_openai_messages``,
``convert_to_messages``), so ``AIMessage.tool_calls`` and ``ToolMessage`` ids
survive the trip.

What the OpenAI shape has no place for (a message's ``id``, ``name``,
``response_metadata``, ``additional_kwargs``, a ``ToolMessage``'s ``status`` and
``artifact``) is given back from the caller's messages: a message the strategy
sends as it was comes back as a copy of the caller's message (so ``full-history``
returns copies equal to the input), and a ``ToolMessage`` the strategy shortened
keeps the ``status`` of the one with its ``tool_call_id`` (``"error"`` is what
ChatAnthropic sends as ``is_error``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from turnpress.compress import Compressor, compress

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

__all__ = ["LangChainCompressor", "compress_messages", "from_openai", "to_openai"]


def _core() -> Any:
    try:
        from langchain_core import messages  # optional dependency: the [langchain] extra
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("turnpress.integrations.langchain needs langchain-core: "
                          "pip install 'turnpress[langchain]'") from None
    return messages


def to_openai(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """``BaseMessage``s as OpenAI chat messages (dicts)."""
    return list(_core().convert_to_openai_messages(list(messages)))


def from_openai(messages: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """OpenAI chat messages as ``BaseMessage``s (``SystemMessage``, ``HumanMessage``,
    ``AIMessage`` with ``tool_calls``, ``ToolMessage``)."""
    return list(_core().convert_to_messages([dict(m) for m in messages]))


def _key(message: dict[str, Any]) -> str:
    return json.dumps(message, sort_keys=True, default=str)


def _given_back(sent: Sequence[dict[str, Any]], originals: Sequence[BaseMessage],
                forms: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """``sent`` (OpenAI messages) as ``BaseMessage``s, with what the OpenAI shape lost
    taken from ``originals`` (whose OpenAI forms are ``forms``; see the module
    docstring)."""
    same: dict[str, list[int]] = {}
    for k, form in enumerate(forms):
        same.setdefault(_key(form), []).append(k)
    status = {m.tool_call_id: m.status for m in originals
              if getattr(m, "type", None) == "tool" and getattr(m, "status", None)}
    out: list[BaseMessage] = []
    for message in sent:
        found = same.get(_key(message))
        if found:
            out.append(originals[found.pop(0)].model_copy(deep=True))
            continue
        [converted] = from_openai([message])
        if converted.type == "tool" and status.get(converted.tool_call_id):
            converted.status = status[converted.tool_call_id]
        out.append(converted)
    return out


def compress_messages(messages: Sequence[BaseMessage], *, strategy: Any = True,
                      tools: Any = None, turns_left: int | None = None) -> list[BaseMessage]:
    """:func:`turnpress.compress` for ``BaseMessage`` lists: what to pass to the chat
    model next, as ``BaseMessage``s (a message sent as it was is a copy of the
    caller's, with its ``id``, metadata and ``status``)."""
    originals = list(messages)
    forms = to_openai(originals)
    if len(forms) != len(originals):  # not one form each: give back converted messages
        return from_openai(compress(forms, strategy=strategy, tools=tools,
                                    turns_left=turns_left))
    return _given_back(compress(forms, strategy=strategy, tools=tools,
                                turns_left=turns_left), originals, forms)


class LangChainCompressor:
    """:class:`turnpress.Compressor` taking and giving ``BaseMessage``s."""

    def __init__(self, strategy: Any = True, *, tools: Any = None) -> None:
        self.compressor = Compressor(strategy, tools=tools)
        self._originals: list[BaseMessage] = []
        self._forms: list[dict[str, Any]] = []

    def add(self, message: BaseMessage) -> None:
        """Append one message (its OpenAI form is read)."""
        forms = to_openai([message])
        self.compressor.extend(forms)
        if len(forms) == 1:
            self._originals.append(message)
            self._forms.extend(forms)

    def extend(self, messages: Sequence[BaseMessage]) -> None:
        """``add`` each of ``messages``."""
        for message in messages:
            self.add(message)

    def messages(self, *, turns_left: int | None = None) -> list[BaseMessage]:
        """What to send now, as ``BaseMessage``s."""
        return _given_back(self.compressor.messages(turns_left=turns_left),
                           self._originals, self._forms)
