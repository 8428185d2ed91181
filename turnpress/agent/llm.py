"""LLM adapters: anything that turns messages into a reply.

An LLM is any callable ``messages -> str`` or ``messages -> LLMReply`` (a reply
with token usage). ``messages`` is a list of ``{"role", "content"}`` dicts, as
:func:`turnpress.render` returns them. This module offers:

- :class:`ScriptedLLM`: fixed replies in order (tests, offline examples);
- :class:`ReplayLLM`: the raw responses of a recorded :class:`~turnpress.Trace`;
- :class:`OpenAICompatible`: any chat-completions endpoint (``turnpress[openai]``);
- :class:`Anthropic`: the Anthropic messages API (``turnpress[anthropic]``).

The SDKs are imported when an adapter is built, never when turnpress is imported.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from turnpress.core.errors import a_or_an, quote
from turnpress.core.model import Message, Usage
from turnpress.core.pricing import CacheRules, Price, resolve_pricing
from turnpress.core.providers import to_anthropic
from turnpress.core.trace import Trace, load_trace

__all__ = [
    "DEFAULT_RETRIES",
    "DEFAULT_TIMEOUT",
    "LLM",
    "PROVIDERS",
    "USAGE_KEYS",
    "Anthropic",
    "LLMError",
    "LLMReply",
    "MissingAPIKeyError",
    "MissingDependencyError",
    "OpenAICompatible",
    "ReplayLLM",
    "ScriptExhaustedError",
    "ScriptedLLM",
    "call_llm",
    "llm_from_spec",
    "llm_pricing",
    "unknown_provider",
]


@dataclass(frozen=True)
class LLMReply:
    """A reply and, when the provider reports it, its token usage.

    ``usage`` uses the keys ``input_tokens`` (the whole prompt, the cached and
    cache-written tokens included, as OpenAI counts it), ``output_tokens`` and, when
    known, ``cached_input_tokens`` (read from the prompt cache) and
    ``cache_write_input_tokens`` (written to it). Other keys are kept as given.
    """

    text: str
    usage: Mapping[str, int] | None = None

    def billed(self) -> Usage | None:
        """The input side of ``usage`` as a :class:`~turnpress.core.model.Usage` (what a
        turn records), or ``None`` when ``input_tokens`` was not reported.

        Raises ``ValueError`` naming the key when a count is not a non-negative
        integer or the cached and written tokens exceed ``input_tokens``.
        """
        usage = self.usage or {}
        for key in USAGE_KEYS:
            value = usage.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 0):
                raise ValueError(f"the LLM reported usage {key}={value!r}; token counts "
                                 f"must be non-negative integers")
        if usage.get("input_tokens") is None:
            return None
        prompt = usage["input_tokens"]
        cached = usage.get("cached_input_tokens") or 0
        written = usage.get("cache_write_input_tokens") or 0
        if cached + written > prompt:
            raise ValueError(f"the LLM reported usage cached_input_tokens={cached} + "
                             f"cache_write_input_tokens={written} > input_tokens={prompt}; "
                             f"input_tokens counts the whole prompt, cached tokens included")
        return Usage(prompt, cached, written)


USAGE_KEYS = ("input_tokens", "output_tokens", "cached_input_tokens",
              "cache_write_input_tokens")
"""The token counts :class:`LLMReply` knows (its ``usage`` keeps other keys as given)."""


LLM = Callable[[list[Message]], str | LLMReply]
"""The LLM protocol: a callable from messages to a reply."""


class LLMError(RuntimeError):
    """An LLM could not produce a reply."""


class MissingAPIKeyError(LLMError):
    """An HTTP adapter found no API key; ``env_var`` is the variable it reads."""

    def __init__(self, env_var: str) -> None:
        super().__init__(f"no API key: set the {env_var} environment variable or pass "
                         f"api_key= (a server at a base_url= may need none)")
        self.env_var = env_var


class ScriptExhaustedError(LLMError):
    """A :class:`ScriptedLLM` was asked for more replies than it has."""


class MissingDependencyError(ImportError):
    """An adapter's SDK is not installed; the message says which extra to install."""


def call_llm(llm: LLM, messages: Sequence[Message]) -> LLMReply:
    """Call ``llm`` with a copy of ``messages`` and return its reply as an :class:`LLMReply`.

    The LLM gets its own copies of the message dicts, so it cannot change what the
    agent recorded. A reply that is neither a ``str`` nor an ``LLMReply`` raises
    ``TypeError``; a reply whose usage is not a set of token counts (see
    :meth:`LLMReply.billed`) raises ``ValueError``.
    """
    reply = llm([dict(m) for m in messages])  # type: ignore[misc]
    if isinstance(reply, str):
        return LLMReply(reply)
    if isinstance(reply, LLMReply):
        if not isinstance(reply.text, str):
            raise TypeError(f"LLMReply.text must be a string, got {type(reply.text).__name__}")
        if reply.usage is not None and not isinstance(reply.usage, Mapping):
            raise TypeError(f"LLMReply.usage must be a mapping of token counts, got "
                            f"{type(reply.usage).__name__}")
        reply.billed()  # a bad count fails here, naming it
        return reply
    raise TypeError(f"the LLM returned {a_or_an(type(reply).__name__)}; it must return a str "
                    f"or an LLMReply")


# -- offline LLMs ------------------------------------------------------------------------


@dataclass
class ScriptedLLM:
    """Returns ``replies`` in order, one per call, and records the messages of each call.

    Running out of replies raises :class:`ScriptExhaustedError`.
    """

    replies: Sequence[str | LLMReply]
    calls: list[list[Message]] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        if isinstance(self.replies, (str, LLMReply)):
            raise TypeError("ScriptedLLM takes a list of replies, not a single reply")
        self.replies = tuple(self.replies)
        for i, reply in enumerate(self.replies):
            if not isinstance(reply, (str, LLMReply)):
                raise TypeError(f"reply {i + 1} is {a_or_an(type(reply).__name__)}; replies "
                                f"must be strings or LLMReply objects")

    @property
    def remaining(self) -> int:
        """How many replies are left."""
        return len(self.replies) - len(self.calls)

    def __call__(self, messages: list[Message]) -> str | LLMReply:
        """The next reply."""
        if self.remaining <= 0:
            raise ScriptExhaustedError(
                f"{type(self).__name__} has no reply left for call {len(self.calls) + 1}: "
                f"it was given {len(self.replies)} replies")
        self.calls.append([dict(m) for m in messages])  # type: ignore[misc]
        return self.replies[len(self.calls) - 1]


class ReplayLLM(ScriptedLLM):
    """Replays the ``raw_response`` of each turn of a trace (a :class:`Trace` or a path)."""

    def __init__(self, trace: Trace | str | os.PathLike[str]) -> None:
        """Load ``trace`` if it is a path and script its turns' raw responses."""
        if not isinstance(trace, Trace):
            trace = load_trace(trace)
        self.trace = trace
        super().__init__([turn.raw_response for turn in trace.turns])


# -- HTTP APIs ---------------------------------------------------------------------------


DEFAULT_TIMEOUT = 120.0
"""Seconds the HTTP adapters wait for one answer before the call is retried or fails."""

DEFAULT_RETRIES = 2
"""How many times the HTTP adapters retry a call that timed out, lost its connection or
got a 408, 409, 429 or 5xx answer (the SDKs' own retry, with back-off)."""


def _import_sdk(module: str, extra: str, adapter: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(
            f"the {adapter} adapter needs the {module!r} package: "
            f"pip install 'turnpress[{extra}]'") from None


def _tokens(obj: Any, *names: str) -> int | None:
    for name in names:
        value = getattr(obj, name, None) if obj is not None else None
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _usage(**counts: int | None) -> dict[str, int] | None:
    usage = {k: v for k, v in counts.items() if v is not None}
    return usage or None


def _api_key(given: str | None, env_var: str, base_url: str | None) -> str:
    """``given``, else ``$env_var``; a server at a custom ``base_url`` may need none."""
    key = given or os.environ.get(env_var)
    if key:
        return key
    if base_url is None:
        raise MissingAPIKeyError(env_var)
    return "not-needed"


def _json_reply(raw: Any, where: str) -> dict[str, Any]:
    """The JSON object of a raw SDK response (``with_raw_response``), checked before the
    SDK parses it: a body that is not JSON (an HTML page from a proxy...), or that holds
    the server's ``error`` instead of a reply, raises :class:`LLMError` saying ``where``
    and what came back, the server's own message when it sent one."""
    http = raw.http_response
    try:
        body = json.loads(http.content)
    except ValueError:
        kind = http.headers.get("content-type", "no content type").split(";")[0].strip()
        raise LLMError(f"{where} answered with a response that is not JSON (HTTP "
                       f"{http.status_code}, {kind}): {quote(http.text)}") from None
    if not isinstance(body, dict):
        raise LLMError(f"{where} answered with JSON that is not an object: {quote(body)}")
    if body.get("error"):
        error = body["error"]
        message = error.get("message") if isinstance(error, dict) else None
        raise LLMError(f"{where} answered with an error: "
                       f"{message if isinstance(message, str) else error}")
    return body


def _parsed(raw: Any, client: Any, model: str, field: str,
            holds: Callable[[Any], bool]) -> Any:
    """The SDK's parsed response of ``raw`` (``with_raw_response``) once its JSON is a
    reply (:func:`_json_reply`) whose ``field`` the API's replies always have
    (``holds(body[field])``); else :class:`LLMError` naming the server, the model and
    what came back."""
    where = f"the server at {client.base_url} (model {model})"
    body = _json_reply(raw, where)
    if not holds(body.get(field)):
        raise LLMError(f"{where} answered with no {field}: {quote(body)}")
    return raw.parse()


class OpenAICompatible:
    """A chat-completions endpoint: OpenAI, or any server that speaks its protocol.

    ``base_url`` points at another server (``http://localhost:11434/v1``...);
    ``api_key`` defaults to ``$OPENAI_API_KEY`` (any text for a server that needs
    none). ``options`` are passed to ``chat.completions.create`` (``temperature``,
    ``max_tokens``...). ``price`` (a preset, ``in=..,cached=..`` or a ``Price``; None:
    ``openai-gpt-4.1``) is what the strategy is told the prompts cost, under OpenAI's
    automatic prompt cache (``cache``, DESIGN §11). Needs ``pip install
    'turnpress[openai]'``.
    """

    #: the prompt cache this provider has (what ``Agent`` tells the strategy)
    cache: str = "openai"
    price: str | Price | None = None

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 *, timeout: float = DEFAULT_TIMEOUT, max_retries: int = DEFAULT_RETRIES,
                 price: str | Price | None = None, **options: Any) -> None:
        """Build the client; raises :class:`MissingDependencyError` without the SDK."""
        openai = _import_sdk("openai", "openai", "OpenAI-compatible")
        api_key = _api_key(api_key, "OPENAI_API_KEY", base_url)
        self.price = price
        self.model = model
        self.base_url = base_url
        self.options = options
        self.client = openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout,
                                    max_retries=max_retries)

    def __repr__(self) -> str:
        return f"OpenAICompatible(model={self.model!r}, base_url={self.base_url!r})"

    def __call__(self, messages: list[Message]) -> LLMReply:
        """Send ``messages`` and return the first choice's text and the usage.

        A reply that is not a chat completion (not JSON, the server's ``error``, no
        choices) raises :class:`LLMError` naming the server, the model and what came
        back."""
        raw = self.client.chat.completions.with_raw_response.create(
            model=self.model, messages=[dict(m) for m in messages], **self.options)
        response = _parsed(raw, self.client, self.model, "choices", bool)
        text = response.choices[0].message.content or ""
        usage = response.usage
        details = getattr(usage, "prompt_tokens_details", None)
        return LLMReply(text, _usage(
            input_tokens=_tokens(usage, "prompt_tokens"),
            output_tokens=_tokens(usage, "completion_tokens"),
            cached_input_tokens=_tokens(details, "cached_tokens"),
        ))


class Anthropic:
    """The Anthropic messages API.

    System messages become the ``system`` parameter; ``cache_system_prompt=True``
    marks it with a ``cache_control`` breakpoint (the system prompt is static, so
    every turn after the first reads it from the cache). ``api_key`` defaults to
    ``$ANTHROPIC_API_KEY``. ``price`` (None: ``anthropic-sonnet-4``) is what the
    strategy is told the prompts cost, under Anthropic's explicit cache (``cache``,
    DESIGN §11). Needs ``pip install 'turnpress[anthropic]'``.
    """

    #: the prompt cache this provider has (what ``Agent`` tells the strategy)
    cache: str = "anthropic"
    price: str | Price | None = None

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 *, max_tokens: int = 4096, cache_system_prompt: bool = False,
                 timeout: float = DEFAULT_TIMEOUT, max_retries: int = DEFAULT_RETRIES,
                 price: str | Price | None = None, **options: Any) -> None:
        """Build the client; raises :class:`MissingDependencyError` without the SDK."""
        anthropic = _import_sdk("anthropic", "anthropic", "Anthropic")
        api_key = _api_key(api_key, "ANTHROPIC_API_KEY", base_url)
        self.price = price
        self.model = model
        self.base_url = base_url
        self.max_tokens = max_tokens
        self.cache_system_prompt = cache_system_prompt
        self.options = options
        self.client = anthropic.Anthropic(api_key=api_key, base_url=base_url, timeout=timeout,
                                          max_retries=max_retries)

    def __repr__(self) -> str:
        return f"Anthropic(model={self.model!r}, base_url={self.base_url!r})"

    def request(self, messages: Iterable[Message]) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for ``messages``."""
        system, conversation = to_anthropic(
            list(messages), [(0, None)] if self.cache_system_prompt else [])
        kwargs: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens,
                                  "messages": conversation, **self.options}
        if system:
            kwargs["system"] = system
        return kwargs

    def __call__(self, messages: list[Message]) -> LLMReply:
        """Send ``messages`` and return the text blocks of the reply and the usage.

        Anthropic's ``input_tokens`` leaves out the tokens read from and written to
        the cache; the reply's ``input_tokens`` adds them back (the whole prompt, as
        :class:`LLMReply` counts it). A reply that is not a message (not JSON, the
        server's ``error``, no content) raises :class:`LLMError` naming the server, the
        model and what came back.
        """
        raw = self.client.messages.with_raw_response.create(**self.request(messages))
        response = _parsed(raw, self.client, self.model, "content",
                           lambda content: isinstance(content, list))
        text = "".join(getattr(b, "text", "") for b in response.content
                       if getattr(b, "type", None) == "text")
        usage = response.usage
        uncached = _tokens(usage, "input_tokens")
        whole = None if uncached is None else uncached + sum(
            _tokens(usage, name) or 0
            for name in ("cache_read_input_tokens", "cache_creation_input_tokens"))
        return LLMReply(text, _usage(
            input_tokens=whole,
            output_tokens=_tokens(usage, "output_tokens"),
            cached_input_tokens=_tokens(usage, "cache_read_input_tokens"),
            cache_write_input_tokens=_tokens(usage, "cache_creation_input_tokens"),
        ))


PROVIDERS: dict[str, Callable[..., LLM]] = {
    "openai": OpenAICompatible,
    "anthropic": Anthropic,
}
"""``--llm PROVIDER:MODEL`` names and the adapters they build."""


def llm_from_spec(spec: str, *, base_url: str | None = None, api_key: str | None = None,
                  timeout: float = DEFAULT_TIMEOUT, max_retries: int = DEFAULT_RETRIES) -> LLM:
    """Build an adapter from ``"openai:MODEL"`` or ``"anthropic:MODEL"``.

    ``timeout`` (seconds per attempt) and ``max_retries`` go to the adapter. Raises
    ``ValueError`` for an unknown provider or a missing model name, and
    :class:`MissingDependencyError` when the provider's SDK is not installed.
    """
    provider, sep, model = spec.partition(":")
    if provider not in PROVIDERS:
        raise ValueError(unknown_provider(spec))
    if not sep or not model.strip():
        raise ValueError(f"{spec!r} names no model; use {provider}:MODEL")
    return PROVIDERS[provider](model.strip(), base_url=base_url, api_key=api_key,
                               timeout=timeout, max_retries=max_retries)


def unknown_provider(spec: str, *others: str) -> str:
    """The error for an ``--llm`` spec whose provider is none of :data:`PROVIDERS`, listing
    ``others`` (forms the caller also takes, e.g. ``scripted``) and ``PROVIDER:MODEL``."""
    valid = ", ".join([*others, *(f"{p}:MODEL" for p in PROVIDERS)])
    return f"unknown LLM provider {spec.partition(':')[0]!r} in {spec!r}; use {valid}"


def llm_pricing(llm: Any) -> tuple[CacheRules, Price]:
    """The prompt cache and the price an LLM's prompts meet (``RenderContext.cache`` and
    ``.price`` of the agent's renders): its ``cache`` and ``price`` attributes
    (:class:`OpenAICompatible`: ``openai``; :class:`Anthropic`: ``anthropic``), else the
    default (the ``openai`` cache, ``openai-gpt-4.1``). A bad value raises
    ``ValueError`` naming the LLM."""
    cache = getattr(llm, "cache", None)
    price = getattr(llm, "price", None)
    cache = cache if isinstance(cache, (str, CacheRules)) else None
    price = price if isinstance(price, (str, Price)) else None
    try:
        return resolve_pricing(cache, price)
    except ValueError as exc:
        raise ValueError(f"llm {llm!r}: {exc}") from None
