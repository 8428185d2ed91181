"""LangChain adapter: a v1 agent middleware, and ``BaseMessage`` lists compressed
(``pip install 'turnpress[langchain]'``).

In a LangChain v1 agent it is one line::

    agent = create_agent(model, tools, middleware=[TurnpressMiddleware()])

:class:`TurnpressMiddleware` wraps each model call (``wrap_model_call``): the
request's system message and messages are compressed by the strategy and the model
gets the result, while the graph state keeps every message, so ``result["messages"]``
and a checkpointer still hold the full history to inspect. For a LangGraph
``create_react_agent`` the same is :func:`pre_model_hook` (it returns
``llm_input_messages``, which LangGraph sends instead of the state's messages).

LangChain agents keep their state as ``langchain_core`` messages. This module
converts them to the OpenAI chat shape turnpress reads and back, with
langchain-core's own converters (``convert_to_openai_messages``,
``convert_to_messages``), so ``AIMessage.tool_calls`` and ``ToolMessage`` ids
survive the trip. ChatAnthropic's extended thinking (an ``AIMessage`` whose content
holds ``thinking`` / ``redacted_thinking`` blocks, signature and all) becomes the
message's ``thinking_blocks``, where turnpress keeps Anthropic thinking in the OpenAI
shape (as it does for Anthropic input), and comes back as those blocks, first in the
``AIMessage``'s content, as ChatAnthropic wrote them.

:func:`compress_messages` and :class:`LangChainCompressor` take, besides
``BaseMessage``s, what LangChain's ``convert_to_messages`` takes (``{"role",
"content"}`` dicts in the OpenAI shape, ``(role, content)`` tuples, strings as human
messages) and give back ``BaseMessage``s; anything else is a ``TypeError`` saying
what to pass.

What the OpenAI shape has no place for (a message's ``id``, ``name``,
``response_metadata``, ``additional_kwargs``, a ``ToolMessage``'s ``status`` and
``artifact``) is given back from the caller's messages: a message the strategy
sends as it was comes back as a copy of the caller's message (so ``full-history``
returns copies equal to the input), and a ``ToolMessage`` the strategy shortened
keeps the ``status`` of the one with its ``tool_call_id`` (``"error"`` is what
ChatAnthropic sends as ``is_error``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from turnpress.compress import Compressor
from turnpress.core.pricing import CacheRules, Price
from turnpress.integrations._common import CompressOptions, compress_chat, message_key
from turnpress.plugins.readers.anthropic_messages import THINKING_BLOCKS

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

try:  # the middleware needs langchain >= 1.0; the list functions need langchain-core only
    from langchain.agents.middleware import AgentMiddleware
except ImportError:  # pragma: no cover - depends on the environment
    AgentMiddleware = None  # type: ignore[assignment,misc]

__all__ = ["MESSAGES_TAKEN", "LangChainCompressor", "TurnpressMiddleware", "as_message",
           "as_messages", "compress_messages", "from_openai", "pre_model_hook", "to_openai"]


def _core() -> Any:
    try:
        from langchain_core import messages  # optional dependency: the [langchain] extra
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("turnpress.integrations.langchain needs langchain-core: "
                          "pip install 'turnpress[langchain]'") from None
    return messages


def to_openai(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """``BaseMessage``s as OpenAI chat messages (dicts); an ``AIMessage``'s thinking
    blocks as its ``thinking_blocks`` (see the module docstring)."""
    return [_thinking_apart(m) for m in _core().convert_to_openai_messages(list(messages))]


def from_openai(messages: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """OpenAI chat messages as ``BaseMessage``s (``SystemMessage``, ``HumanMessage``,
    ``AIMessage`` with ``tool_calls`` and its ``thinking_blocks`` first in its content,
    ``ToolMessage``)."""
    return list(_core().convert_to_messages([_thinking_back(m) for m in messages]))


def _thinking_apart(message: dict[str, Any]) -> dict[str, Any]:
    """An assistant message with its content's thinking blocks as ``thinking_blocks``
    (its content the other parts; ``None`` when none are left and it calls tools)."""
    content = message.get("content")
    if message.get("role") != "assistant" or not isinstance(content, list):
        return message
    thinking = [p for p in content if isinstance(p, dict) and p.get("type") in THINKING_BLOCKS]
    if not thinking:
        return message
    rest = [p for p in content if not (isinstance(p, dict)
                                       and p.get("type") in THINKING_BLOCKS)]
    empty = None if message.get("tool_calls") else ""
    return {**message, "content": rest or empty, "thinking_blocks": thinking}


def _thinking_back(message: dict[str, Any]) -> dict[str, Any]:
    """A chat message for ``convert_to_messages``: ``thinking_blocks`` put back first in
    its content (as ChatAnthropic holds them)."""
    out = dict(message)
    thinking = out.pop("thinking_blocks", None)
    if not thinking:
        return out
    content = out.get("content")
    parts = (list(content) if isinstance(content, list)
             else [{"type": "text", "text": content}] if content else [])
    out["content"] = [*(dict(b) for b in thinking), *parts]
    return out


#: what the LangChain functions take as messages, as their errors say it
MESSAGES_TAKEN = ("BaseMessages, or what LangChain's convert_to_messages takes: "
                  "{'role', 'content'} dicts, (role, content) tuples, strings")


def as_messages(messages: Any, where: str) -> list[BaseMessage]:
    """``messages`` (a list of what :data:`MESSAGES_TAKEN` says) as ``BaseMessage``s,
    those given as ``BaseMessage``s the same objects; a string, a single message or a
    message LangChain cannot read is a ``TypeError`` naming ``where``."""
    if isinstance(messages, (str, bytes, Mapping, _core().BaseMessage)) \
            or not isinstance(messages, Iterable) or _is_pair(messages):
        raise TypeError(f"{where}: expected a list of messages ({MESSAGES_TAKEN}), got "
                        f"{type(messages).__name__}")
    return [as_message(m, where, k) for k, m in enumerate(messages)]


def _is_pair(messages: Any) -> bool:
    """Whether ``messages`` is one ``(role, content)`` message rather than a tuple of
    messages (a tuple of BaseMessages, or of pairs, is a sequence of messages)."""
    return (isinstance(messages, tuple) and len(messages) == 2
            and isinstance(messages[0], str) and isinstance(messages[1], (str, list)))


def as_message(message: Any, where: str, index: int = 0) -> BaseMessage:
    """One message (see :func:`as_messages`; ``index``: its place in the caller's
    list) as a ``BaseMessage``."""
    try:
        [converted] = _core().convert_to_messages([message])
    except (NotImplementedError, ValueError, TypeError) as exc:
        problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TypeError(f"{where}: message {index} is not one LangChain can read: {problem} "
                        f"(pass {MESSAGES_TAKEN})") from None
    return converted


def _given_back(sent: Sequence[dict[str, Any]], originals: Sequence[BaseMessage],
                forms: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """``sent`` (OpenAI messages) as ``BaseMessage``s, with what the OpenAI shape lost
    taken from ``originals`` (whose OpenAI forms are ``forms``; see the module
    docstring)."""
    same: dict[str, list[int]] = {}
    for k, form in enumerate(forms):
        same.setdefault(message_key(form), []).append(k)
    status = {m.tool_call_id: m.status for m in originals
              if getattr(m, "type", None) == "tool" and getattr(m, "status", None)}
    out: list[BaseMessage] = []
    for message in sent:
        found = same.get(message_key(message))
        if found:
            out.append(originals[found.pop(0)].model_copy(deep=True))
            continue
        [converted] = from_openai([message])
        if converted.type == "tool" and status.get(converted.tool_call_id):
            converted.status = status[converted.tool_call_id]
        out.append(converted)
    return out


def compress_messages(messages: Sequence[Any], *, strategy: Any = True,
                      tools: Any = None, turns_left: int | None = None,
                      cache: str | CacheRules | None = None, price: str | Price | None = None,
                      model: Any = None) -> list[BaseMessage]:
    """:func:`turnpress.compress` for ``BaseMessage`` lists: what to pass to the chat
    model next, as ``BaseMessage``s (a message sent as it was is a copy of the
    caller's, with its ``id``, metadata and ``status``). A ``ToolMessage`` with
    ``status="error"`` makes its turn a failed one for the strategy. ``cache`` and
    ``price`` are handed to ``compress()``; without ``cache``, the provider of
    ``model`` (the chat model the messages go to) where it can be told, else
    ``openai``. ``messages`` may hold what LangChain's ``convert_to_messages`` takes
    (dicts, ``(role, content)`` tuples, strings); anything else is a ``TypeError``."""
    options = CompressOptions(strategy, cache=cache, price=price, where="compress_messages")
    return _compressed(as_messages(messages, "compress_messages"), options, tools=tools,
                       turns_left=turns_left, model=model)


def _compressed(messages: Sequence[BaseMessage], options: CompressOptions, *,
                tools: Any = None, turns_left: int | None = None,
                model: Any = None) -> list[BaseMessage]:
    """:func:`compress_messages` with checked options (``model``: the chat model the
    messages go to, for the provider's cache model)."""
    keywords = {**options.keywords(model), "tools": tools, "turns_left": turns_left}
    originals = list(messages)
    failed = {m.tool_call_id for m in originals
              if getattr(m, "type", None) == "tool" and getattr(m, "status", None) == "error"}
    forms = to_openai(originals)
    if len(forms) != len(originals):  # not one form each: give back converted messages
        return from_openai(compress_chat(forms, failed=failed, **keywords))
    return _given_back(compress_chat(forms, failed=failed, **keywords), originals, forms)


def _openai_tools(tools: Sequence[Any]) -> list[dict[str, Any]] | None:
    """A request's function tools (``BaseTool``s or dicts) as OpenAI tool schemas, for
    the strategy's ``ctx.tools``; ``None`` when there are none. A provider's built-in
    tool (``{"type": "web_search_preview"}``...), which has no function schema, is left
    out, as is a tool LangChain cannot convert: the model still gets every tool."""
    from langchain_core.utils.function_calling import (  # optional dependency: [langchain]
        convert_to_openai_tool,
    )

    schemas = []
    for tool in tools or ():
        try:
            schema = convert_to_openai_tool(tool)
        except (ValueError, TypeError, NotImplementedError):
            continue
        if not isinstance(schema, Mapping) or schema.get("type") != "function":
            continue
        function = schema.get("function")
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            schemas.append(schema)
    return schemas or None


def pre_model_hook(strategy: Any = True, *, cache: str | CacheRules | None = None,
                   price: str | Price | None = None) -> Any:
    """A LangGraph ``create_react_agent(pre_model_hook=...)`` node: it returns the
    compressed messages as ``llm_input_messages`` (what LangGraph sends to the model
    instead of the state's ``messages``), so the state keeps the full history. The
    hook does not see the model: pass ``cache="anthropic"`` for an Anthropic model
    (default: ``openai``)."""
    options = CompressOptions(strategy, cache=cache, price=price, where="pre_model_hook")

    def hook(state: Any) -> dict[str, Any]:
        """Compress the state's messages for this model call."""
        messages = state["messages"] if isinstance(state, dict) else state.messages
        return {"llm_input_messages": _compressed(messages, options)}

    return hook


class LangChainCompressor:
    """:class:`turnpress.Compressor` taking and giving ``BaseMessage``s (``cache``:
    ``"openai"`` when not given, as in the other integrations; ``price``: the cache's
    default when not given). A ``ToolMessage`` with ``status="error"`` makes its turn a
    failed one, as in :func:`compress_messages`, whose result ``messages()`` equals."""

    def __init__(self, strategy: Any = True, *, tools: Any = None,
                 cache: str | CacheRules | None = None,
                 price: str | Price | None = None) -> None:
        options = CompressOptions(strategy, cache=cache, price=price,
                                  where="LangChainCompressor")
        self.compressor = Compressor(strategy, tools=tools, cache=options.cache_for(),
                                     price=price)
        self._originals: list[BaseMessage] = []
        self._forms: list[dict[str, Any]] = []

    def add(self, message: Any) -> None:
        """Append one message (its OpenAI form is read): a ``BaseMessage`` or what
        LangChain's ``convert_to_messages`` takes (a dict, a ``(role, content)``
        tuple, a string); anything else is a ``TypeError``."""
        message = as_message(message, "LangChainCompressor.add")
        forms = to_openai([message])
        failed = getattr(message, "type", None) == "tool" and getattr(
            message, "status", None) == "error"  # a failed turn, as in compress_messages
        for form in forms:
            self.compressor.add(form, failed=failed and form.get("role") == "tool")
        if len(forms) == 1:
            self._originals.append(message)
            self._forms.extend(forms)

    def extend(self, messages: Sequence[Any]) -> None:
        """``add`` each of ``messages`` (a list, as :func:`compress_messages` takes)."""
        for message in as_messages(messages, "LangChainCompressor.extend"):
            self.add(message)

    def messages(self, *, turns_left: int | None = None) -> list[BaseMessage]:
        """What to send now, as ``BaseMessage``s."""
        return _given_back(self.compressor.messages(turns_left=turns_left),
                           self._originals, self._forms)


if AgentMiddleware is not None:

    class TurnpressMiddleware(AgentMiddleware):
        """A LangChain v1 agent middleware: ``create_agent(model, tools,
        middleware=[TurnpressMiddleware(strategy)])``.

        Before each model call it compresses the request's system message and messages
        with ``strategy`` (see :func:`turnpress.compress`) and calls the model with
        them; the graph state is not touched, so the agent's ``messages`` keep the full
        history. Tool-call ids and pairing are the strategy's (every shown tool result
        follows its call); a message the strategy sends as it was is the caller's own
        ``BaseMessage`` (content blocks such as reasoning, ``id`` and metadata kept).

        ``cache`` (``"openai"`` / ``"anthropic"`` / ``"none"``) and ``price`` (a preset
        or ``in=..,cached=..``) are handed to ``compress()``; without ``cache``, the
        provider of the request's chat model (``ChatOpenAI`` / ``ChatAnthropic``) where
        it can be told, else ``openai``. The request's tools reach a plugin
        strategy as ``ctx.tools``.
        """

        def __init__(self, strategy: Any = True, *, cache: str | CacheRules | None = None,
                     price: str | Price | None = None) -> None:
            super().__init__()
            self.options = CompressOptions(strategy, cache=cache, price=price,
                                           where="TurnpressMiddleware")

        def compressed(self, request: Any) -> Any:
            """``request`` with its system message and messages as the strategy renders
            them (a new request: the one given is unchanged)."""
            head = [request.system_message] if request.system_message is not None else []
            sent = _compressed([*head, *request.messages], self.options,
                               tools=_openai_tools(request.tools), model=request.model)
            system = None
            if sent and sent[0].type == "system":
                system, sent = sent[0], sent[1:]
            return request.override(system_message=system, messages=list(sent))

        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            """Call the model with the compressed request."""
            return handler(self.compressed(request))

        async def awrap_model_call(self, request: Any, handler: Any) -> Any:
            """Call the model with the compressed request (async agents)."""
            return await handler(self.compressed(request))

else:  # pragma: no cover - depends on the environment

    def __getattr__(name: str) -> Any:
        if name == "TurnpressMiddleware":
            raise ImportError("TurnpressMiddleware needs langchain >= 1.0: "
                              "pip install 'turnpress[langchain]'")
        raise AttributeError(name)
