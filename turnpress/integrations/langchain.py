"""LangChain adapter: compress ``BaseMessage`` lists (``pip install 'turnpress[langchain]'``).

LangChain agents keep their state as ``langchain_core`` messages. This module
converts them to the OpenAI chat shape turnpress reads and back, with
langchain-core's own converters (``convert_to_openai_messages``,
``convert_to_messages``), so ``AIMessage.tool_calls`` and ``ToolMessage`` ids
survive the trip.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from turnpress.compress import Compressor, compress

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

__all__ = ["LangChainCompressor", "compress_messages", "from_openai", "to_openai"]


def _core() -> Any:
    try:
        from langchain_core import messages
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


def compress_messages(messages: Sequence[BaseMessage], *, strategy: Any = True,
                      tools: Any = None, turns_left: int | None = None) -> list[BaseMessage]:
    """:func:`turnpress.compress` for ``BaseMessage`` lists: what to pass to the chat
    model next, as ``BaseMessage``s."""
    return from_openai(compress(to_openai(messages), strategy=strategy, tools=tools,
                                turns_left=turns_left))


class LangChainCompressor:
    """:class:`turnpress.Compressor` taking and giving ``BaseMessage``s."""

    def __init__(self, strategy: Any = True, *, tools: Any = None) -> None:
        self.compressor = Compressor(strategy, tools=tools)

    def add(self, message: BaseMessage) -> None:
        """Append one message (its OpenAI form is read)."""
        self.compressor.extend(to_openai([message]))

    def extend(self, messages: Sequence[BaseMessage]) -> None:
        """``add`` each of ``messages``."""
        for message in messages:
            self.add(message)

    def messages(self, *, turns_left: int | None = None) -> list[BaseMessage]:
        """What to send now, as ``BaseMessage``s."""
        return from_openai(self.compressor.messages(turns_left=turns_left))
