"""The ``llm`` summarizer: a model's summary of the folded turns, through the agent's
adapters (``register_summarizers``; registered by name in
:mod:`turnpress.plugins.summarizers`, which cannot import this layer).

The request is two messages: ``summary/system.j2`` (the instructions) and
``summary/request.j2`` (the mission, the previous summary, the turns to fold as
text). Both are templates, overridable like any other. The usage the provider
reports is the summary's ``input_tokens`` / ``output_tokens``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from turnpress.agent.llm import (
    LLM,
    PROVIDERS,
    MissingDependencyError,
    OpenAICompatible,
    call_llm,
    llm_from_spec,
)
from turnpress.core.compression import RenderContext
from turnpress.core.model import Message, Turn
from turnpress.core.providers import format_text
from turnpress.core.summaries import Summary, SummaryUnavailable
from turnpress.core.tokens import count_prompt_tokens
from turnpress.plugins.full_history import FullHistory
from turnpress.plugins.summarizers import digest, template_source

__all__ = ["DEFAULT_MAX_TOKENS", "SYSTEM_TEMPLATE", "USER_TEMPLATE", "LLMSummarizer"]

SYSTEM_TEMPLATE = "summary/system.j2"
USER_TEMPLATE = "summary/request.j2"
DEFAULT_MAX_TOKENS = 2048
"""The most output tokens a summary may use (what the budget reserves per request)."""

_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


class LLMSummarizer:
    """Asks a model for the summary.

    ``model``: ``openai:MODEL`` or ``anthropic:MODEL`` (``base_url`` for another
    server speaking that protocol), or empty when ``llm`` is given: any LLM callable,
    such as the adapter of the agent that runs the strategy. Without either, or
    without an API key for the provider (and no ``base_url``), or without the
    provider's SDK, it raises :class:`SummaryUnavailable` saying what to configure
    (the strategy then falls back to ``extractive``). The adapter is built on the
    first request, so a summary found in the disk cache needs no key at all.
    """

    name = "llm"

    def __init__(self, model: str = "", base_url: str = "", *, llm: LLM | None = None,
                 max_tokens: int = DEFAULT_MAX_TOKENS) -> None:
        self.model = model.strip()
        self.base_url = base_url
        self.max_tokens = max_tokens
        self._llm = llm
        if llm is None:
            if not self.model:
                raise SummaryUnavailable("no summarizer model configured (--summarizer "
                                         "llm:openai:MODEL)")
            provider, sep, name = self.model.partition(":")
            if provider not in PROVIDERS or not sep or not name.strip():
                valid = ", ".join(f"llm:{p}:MODEL" for p in PROVIDERS)
                raise ValueError(f"summarizer 'llm:{self.model}' names no provider and "
                                 f"model; use {valid}")
            if not base_url and not os.environ.get(_KEY_ENV[provider]):
                raise SummaryUnavailable(f"summarizer llm:{self.model}: no API key "
                                         f"(set {_KEY_ENV[provider]} or give --base-url)")

    @property
    def options(self) -> dict[str, Any]:
        """What identifies the summaries it makes: the model, server and output limit
        (an agent's own adapter by its repr)."""
        return {"model": self.model or _adapter_name(self._llm), "base_url": self.base_url,
                "max_tokens": self.max_tokens}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if self.model:
            state["_llm"] = None  # an SDK client does not pickle; rebuilt on first use
        return state

    def llm(self) -> LLM:
        """The adapter (built on first use)."""
        if self._llm is None:
            try:
                adapter = llm_from_spec(self.model, base_url=self.base_url or None)
            except MissingDependencyError as exc:
                raise SummaryUnavailable(f"summarizer llm:{self.model}: {exc}") from None
            if isinstance(adapter, OpenAICompatible):
                adapter.options.setdefault("max_tokens", self.max_tokens)
            else:  # Anthropic takes it as its own setting
                adapter.max_tokens = self.max_tokens  # type: ignore[attr-defined]
            self._llm = adapter
        return self._llm

    def request(self, turns: Sequence[Turn], ctx: RenderContext, *,
                previous: str | None = None, start: int = 0) -> list[Message]:
        """The messages of the summarization request for ``turns[start:]`` (with the
        ``previous`` summary of ``turns[:start]``)."""
        pairs = FullHistory().pairs(ctx, turns)[start:]
        history = format_text([m for pair in pairs for m in pair]).rstrip("\n")
        return [ctx.message("system", ctx.template(SYSTEM_TEMPLATE)),
                ctx.message("user", ctx.template(
                    USER_TEMPLATE, mission=ctx.mission.rstrip("\n"), previous=previous,
                    first=start + 1, last=len(turns), history=history))]

    def cache_key(self, turns: Sequence[Turn], ctx: RenderContext, *,
                  previous: str | None = None, start: int = 0) -> str:
        """The digest of the summarizer, its options, its templates and the request
        (the folded turns and the previous summary)."""
        return digest(self.name, self.options,
                      template_source(ctx, SYSTEM_TEMPLATE), template_source(ctx, USER_TEMPLATE),
                      self.request(turns, ctx, previous=previous, start=start))

    def estimate(self, turns: Sequence[Turn], ctx: RenderContext, *,
                 previous: str | None = None, start: int = 0) -> tuple[int, int]:
        """``(input tokens, most output tokens)`` of the request (for a budget)."""
        return (count_prompt_tokens(self.request(turns, ctx, previous=previous, start=start)),
                self.max_tokens)

    def summarize(self, turns: Sequence[Turn], ctx: RenderContext, *,
                  previous: str | None = None, start: int = 0) -> Summary:
        """Send the request and return the reply's text and usage (a usage the provider
        did not report counts as 0)."""
        reply = call_llm(self.llm(), self.request(turns, ctx, previous=previous, start=start))
        usage = reply.usage or {}
        return Summary(reply.text.strip(), int(usage.get("input_tokens") or 0),
                       int(usage.get("output_tokens") or 0))


def _adapter_name(llm: Any) -> str:
    """What names an agent's adapter in a cache key: its class and model (an adapter
    without a ``model`` is named by its identity, so its summaries are reused only
    within this process)."""
    model = getattr(llm, "model", None)
    kind = type(llm).__qualname__
    return f"{kind}:{model}:{getattr(llm, 'base_url', None)}" if isinstance(model, str) \
        else f"{kind}@{id(llm):x}"
