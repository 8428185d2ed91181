"""What every framework integration shares: the options it hands to :func:`turnpress.compress`.

Each integration takes ``strategy=``, ``cache=`` and ``price=`` and hands all three
to ``compress()`` (or ``render()``), checked when the integration is built. The
cache model is never left to ``compress()``'s own default (the provider of its
``format``, which an integration picks for its own reasons): it is ``cache`` when
given, else the provider of the framework's model where it can be told
(``ChatAnthropic``, ``"claude-..."``, ``"anthropic:..."`` -> ``anthropic``;
``ChatOpenAI``, ``"gpt-..."``, ``"o3"`` -> ``openai``), else ``openai``, the
library's default (DESIGN §11). ``price`` None is that cache's default price
(``openai-gpt-4.1`` / ``anthropic-sonnet-4``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from turnpress.compress import compress, compress_with_errors
from turnpress.core.compression import Compression, get_strategy
from turnpress.core.pricing import DEFAULT_CACHE, CacheRules, Price, resolve_pricing

__all__ = ["CompressOptions", "compress_chat", "message_key", "provider_of"]

#: words in a model's class or name, and the provider whose cache model it bills by
_PROVIDERS = ((re.compile(r"anthropic|claude"), "anthropic"),
              (re.compile(r"openai|gpt|\bo\d"), "openai"))


def provider_of(model: Any) -> str | None:
    """The provider (``"openai"`` / ``"anthropic"``) a framework's model object or
    model name bills by, or ``None`` when it cannot be told (a test model, another
    provider)."""
    if model is None:
        return None
    names = [type(model).__name__, *(str(getattr(model, a, "") or "") for a in (
        "model_name", "model", "model_id", "system"))]
    if isinstance(model, str):
        names = [model]
    text = " ".join(names).lower()
    for pattern, provider in _PROVIDERS:
        if pattern.search(text):
            return provider
    return None


def compress_chat(messages: Sequence[Mapping[str, Any]], *, failed: Collection[str] = (),
                  **keywords: Any) -> list[dict[str, Any]]:
    """``compress(messages, **keywords)`` of OpenAI chat messages whose tool results
    answering the calls in ``failed`` (tool-call ids) are errors.

    The OpenAI chat shape has no error flag on a tool result, while frameworks keep
    one beside it (LangChain's ``ToolMessage.status``, pydantic-ai's
    ``RetryPromptPart``). So that a strategy sees those turns as failed (and shows the
    last failed attempt), they are flagged as Anthropic's ``is_error`` flags them
    (:func:`turnpress.compress.compress_with_errors`); the messages are read and given
    back in the OpenAI chat shape, as ``compress()`` reads and gives them: never merged,
    re-roled or refused for the sake of another provider's shape. Without ``failed``
    this is ``compress()`` itself.
    """
    if not failed:
        return compress(list(messages), **keywords)
    return compress_with_errors(list(messages), failed, **keywords)


def message_key(message: Mapping[str, Any]) -> str:
    """What a chat message says, the differences between a framework's chat form of a
    message and ``compress()``'s copy of it evened out (empty content is ``None``, a
    content of text parts only is their text, ``name`` and ``cache_control`` markers do
    not count, neither do the order of keys nor the spacing of JSON arguments), so a
    message the strategy sent as it was is found among the caller's."""
    plain = {k: v for k, v in _plain_chat(message).items()
             if v not in ("", None) and k != "name"}
    if plain.get("tool_calls"):
        plain["tool_calls"] = [_canonical_call(c) for c in plain["tool_calls"]]
    return json.dumps(plain, sort_keys=True, default=str)


def _canonical_call(call: Any) -> Any:
    """A tool call with its JSON ``arguments`` written one way."""
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping) or not isinstance(function.get("arguments"), str):
        return call
    try:
        arguments = json.dumps(json.loads(function["arguments"]), sort_keys=True)
    except ValueError:
        return call
    return {**call, "function": {**function, "arguments": arguments}}


def _plain_chat(message: Mapping[str, Any]) -> dict[str, Any]:
    """A chat message as :func:`message_key` compares it: a content list of text blocks
    only becomes one string, ``cache_control`` markers and the readers' private
    ``_``-keys are dropped."""
    out = {k: v for k, v in message.items() if not k.startswith("_")}
    content = out.get("content")
    if isinstance(content, list) and all(isinstance(b, Mapping) and b.get("type") == "text"
                                         for b in content):
        out["content"] = "".join(str(b.get("text", "")) for b in content)
    elif isinstance(content, list):
        out["content"] = [{k: v for k, v in b.items() if k != "cache_control"}
                          if isinstance(b, Mapping) else b for b in content]
    return out


class CompressOptions:
    """The strategy, cache model and price an integration passes to ``compress()``.

    All three are checked here: an unknown strategy, cache model or a malformed price
    is a ``ValueError`` naming the integration (``where``) when it is built, not at
    the first model call. ``keywords(model)`` gives the keyword arguments of one
    ``compress()`` call: ``strategy``, ``cache`` (the one given, else the provider of
    the framework's ``model`` where it can be told, else ``openai``) and ``price``
    (the one given, else None: the cache's default price).
    """

    def __init__(self, strategy: Compression = True, *, cache: str | CacheRules | None = None,
                 price: str | Price | None = None,
                 where: str = "turnpress integration") -> None:
        try:
            get_strategy(strategy)
            resolve_pricing(cache, price)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        self.strategy = strategy
        self.cache = cache
        self.price = price

    def cache_for(self, model: Any = None) -> str | CacheRules:
        """The cache model of a call to ``model`` (see the class docstring)."""
        if self.cache is not None:
            return self.cache
        return provider_of(model) or DEFAULT_CACHE

    def keywords(self, model: Any = None) -> dict[str, Any]:
        """Keyword arguments for ``compress()`` (see the class docstring)."""
        return {"strategy": self.strategy, "cache": self.cache_for(model), "price": self.price}
