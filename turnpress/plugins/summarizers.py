"""Built-in plugin: the summarizers of summary-based compaction (``register_summarizers``).

- ``extractive``: turnpress's own coalesced view of the folded turns (the tool calls
  made, the last outputs, what was defined; for an imported transcript, the tool
  calls, the last outputs and the user's words). No model, deterministic, free.
- ``llm``: a model's summary through the agent's adapters (``OpenAICompatible``,
  ``Anthropic``), with the prompt in ``templates/summary/``. It lives in
  :mod:`turnpress.agent.summarizer`, a layer above the plugins, so it is registered
  here by name (``"turnpress.agent.summarizer:LLMSummarizer"``) and imported when it
  is first used, as the ``run`` command is.

Also here: what runs a summarizer for a strategy (:class:`SummaryRuntime`: the
on-disk summary cache, the spending budget) and :func:`build_summarizer`, which
reads a ``--summarizer`` spec (``extractive``, ``llm``, ``llm:openai:MODEL``) and
falls back to ``extractive``, with a note saying why, when no model is configured.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from turnpress.core.compression import RenderContext, has_printed
from turnpress.core.hookspecs import hookimpl
from turnpress.core.model import Turn
from turnpress.core.registry import Registry, get_registry
from turnpress.core.summaries import Summary, SummaryBudgetExceeded, SummaryUnavailable
from turnpress.core.templates import get_environment
from turnpress.plugins._imported_messages import last_outputs, words_section
from turnpress.plugins._imported_messages import tool_calls as transcript_tool_calls

__all__ = [
    "CACHE_ENV",
    "LLM_SUMMARIZER",
    "ExtractiveSummarizer",
    "SummaryCache",
    "SummaryRuntime",
    "build_summarizer",
    "default_cache_dir",
    "template_source",
]

SUMMARY_LINES = 5
"""Lines the extractive summary keeps at each end of a transcript's output (the
coalesced view keeps 20: a summary is meant to be much smaller than what it replaces)."""

LLM_SUMMARIZER = "turnpress.agent.summarizer:LLMSummarizer"
"""Where the ``llm`` summarizer lives (imported when first used)."""

CACHE_ENV = "TURNPRESS_SUMMARY_CACHE"
"""Overrides the default summary cache directory (``off``: no disk cache)."""


class ExtractiveSummarizer:
    """turnpress's coalesced view of the folded turns, as the summary text.

    For a PTC-Lisp run: the ``user/`` namespace as of the last folded turn, the last
    ``tool_call_limit`` (20) tool calls and the last ``println_limit`` (10) printed
    lines (the sections ``single-user-coalesced`` shows, without the mission and
    ``tool/`` / ``data/``, which stay in the prompt's head). For an imported
    transcript: the tool calls made, the last ``println_limit`` outputs (each cut to
    its first and last ``lines`` (5) lines) and the user's own words. No model:
    ``input_tokens`` and ``output_tokens`` are 0.
    """

    name = "extractive"

    def __init__(self, model: str = "", base_url: str = "", *, tool_call_limit: int = 20,
                 println_limit: int = 10, lines: int = SUMMARY_LINES) -> None:
        if model:
            raise ValueError(f"summarizer 'extractive' takes no model, got {model!r}; "
                             f"use llm:openai:MODEL for a model's summary")
        self.tool_call_limit = tool_call_limit
        self.println_limit = println_limit
        self.lines = lines

    @property
    def options(self) -> dict[str, Any]:
        """The options that change the text."""
        return {"tool_call_limit": self.tool_call_limit, "println_limit": self.println_limit,
                "lines": self.lines}

    def cache_key(self, turns: Sequence[Turn], ctx: RenderContext, *,
                  previous: str | None = None, start: int = 0) -> str | None:
        """None: the view is free and deterministic, nothing is kept on disk."""
        return None

    def summarize(self, turns: Sequence[Turn], ctx: RenderContext, *,
                  previous: str | None = None, start: int = 0) -> Summary:
        """The coalesced view of every folded turn (``previous`` is not needed: the
        view of all of ``turns`` already holds what it said)."""
        if not turns:
            return Summary("")
        if ctx.is_transcript:
            parts = [transcript_tool_calls(turns, ctx, self.tool_call_limit),
                     last_outputs(turns, ctx, self.println_limit, lines=self.lines),
                     words_section(turns, ctx)]
        else:
            memory = turns[-1].memory
            parts = [*ctx.namespaces(memory, show_samples=not has_printed(turns),
                                     stable=False),
                     ctx.tool_calls(turns, self.tool_call_limit),
                     ctx.output(turns, self.println_limit)]
        return Summary("\n\n".join(p for p in parts if p))


# -- the on-disk cache ---------------------------------------------------------------------


def default_cache_dir() -> Path:
    """Where summaries are kept by default: ``$TURNPRESS_SUMMARY_CACHE``, else the user
    cache directory (``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux, ``~/Library/Caches``
    on macOS, ``%LOCALAPPDATA%`` on Windows) under ``turnpress/summaries``."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given).expanduser()
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    elif sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "turnpress" / "summaries"


class SummaryCache:
    """Summaries on disk, one JSON file per digest (``ab/abcdef....json``).

    A file that cannot be read is treated as missing (the summary is asked for again
    and the file rewritten); writes go through a temporary file, so a reader never
    sees half a summary.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> Summary | None:
        """The summary kept under ``key`` (``cached=True``), or None."""
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
            return Summary(data["text"], data["input_tokens"], data["output_tokens"],
                           cached=True)
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, summary: Summary) -> None:
        """Keep ``summary`` under ``key``; a directory that cannot be written raises
        ``OSError`` naming it."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(summary.to_json(), ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)


def digest(*parts: Any) -> str:
    """The sha256 of ``parts`` as canonical JSON (what a summary cache key is)."""
    text = json.dumps(parts, ensure_ascii=False, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def template_source(ctx: RenderContext, name: str) -> str:
    """The source text of template ``name`` as ``ctx`` finds it (overrides included)."""
    env = get_environment(ctx.template_dirs)
    assert env.loader is not None
    return env.loader.get_source(env, name)[0]


# -- running a summarizer for a strategy ------------------------------------------------------


@dataclass
class SummaryRuntime:
    """How a strategy's summaries are obtained: the disk cache and the budget.

    ``cache_dir``: where summaries are kept (None: no disk cache); a summary found
    there is used as it is and no request is sent. ``budget_usd``: the most the
    summarization requests may spend (None: no limit), with ``input_price`` and
    ``output_price`` in USD per million tokens; before each request its cost is
    estimated (its input tokens, plus the summarizer's ``max_tokens`` of output),
    and a request that could go past the budget raises
    :class:`~turnpress.core.summaries.SummaryBudgetExceeded` instead of being sent.
    ``requests`` and ``spent_usd`` count what was really sent.
    """

    cache_dir: Path | None = None
    budget_usd: float | None = None
    input_price: float = 0.0
    output_price: float = 0.0
    requests: int = 0
    spent_usd: float = 0.0
    _cache: SummaryCache | None = field(default=None, repr=False)
    #: summaries made in this process, by key (a prompt rendered again asks no model)
    _made: dict[str, Summary] = field(default_factory=dict, repr=False)

    def summarize(self, summarizer: Any, turns: Sequence[Turn], ctx: RenderContext, *,
                  previous: str | None, start: int) -> Summary:
        """``summarizer``'s summary of ``turns``, from the disk cache when it is there."""
        key = summarizer.cache_key(turns, ctx, previous=previous, start=start)
        cache = self.cache()
        if key is not None and key in self._made:
            return self._made[key]
        if key is not None and cache is not None:
            found = cache.get(key)
            if found is not None:
                self._made[key] = found
                return found
        if key is not None and self.budget_usd is not None:
            estimate = getattr(summarizer, "estimate", None)
            tokens_in, tokens_out = estimate(turns, ctx, previous=previous, start=start) \
                if estimate is not None else (0, 0)
            cost = (tokens_in * self.input_price + tokens_out * self.output_price) / 1e6
            if self.spent_usd + cost > self.budget_usd + 1e-12:
                raise SummaryBudgetExceeded(
                    f"summary budget reached: {self.requests} summarization "
                    f"request{'s' if self.requests != 1 else ''} spent "
                    f"${self.spent_usd:.4f} of ${self.budget_usd:.4f}, and the next one "
                    f"(about {tokens_in} input tokens, up to {tokens_out} output tokens) "
                    f"could cost ${cost:.4f}. Raise --summary-budget, or run again: the "
                    f"summaries already made are cached and cost nothing")
        summary = summarizer.summarize(turns, ctx, previous=previous, start=start)
        if key is not None:
            self._made[key] = replace(summary, cached=True)
            self.requests += 1
            self.spent_usd += (summary.input_tokens * self.input_price
                               + summary.output_tokens * self.output_price) / 1e6
            if cache is not None:
                try:
                    cache.put(key, summary)
                except OSError as exc:
                    raise SummaryUnavailable(f"summary cache {self.cache_dir}: cannot "
                                             f"write: {exc.strerror or exc}; choose "
                                             f"another --summary-cache DIR") from None
        return replace(summary, cached=False)

    def cache(self) -> SummaryCache | None:
        """The disk cache (None when ``cache_dir`` is None)."""
        if self.cache_dir is None:
            return None
        if self._cache is None or self._cache.directory != self.cache_dir:
            self._cache = SummaryCache(self.cache_dir)
        return self._cache


def default_runtime() -> SummaryRuntime:
    """The runtime of a strategy nobody configured: the default cache directory
    (``off`` in ``$TURNPRESS_SUMMARY_CACHE``: none), no budget."""
    if os.environ.get(CACHE_ENV, "").strip().lower() == "off":
        return SummaryRuntime(None)
    return SummaryRuntime(default_cache_dir())


def build_summarizer(spec: str, *, base_url: str = "", llm: Callable[..., Any] | None = None,
                     registry: Registry | None = None) -> tuple[Any, str | None]:
    """``(summarizer, note)`` for ``spec``: ``NAME`` or ``NAME:ARG`` (``extractive``,
    ``llm``, ``llm:openai:MODEL``, ``llm:anthropic:MODEL``, a plugin's name).

    The class registered as ``NAME`` is built with ``model=ARG`` and ``base_url``
    (and ``llm``, an adapter to call, when given and the class takes it). When it
    says it cannot be used (no model configured, no API key, SDK missing: it raises
    :class:`SummaryUnavailable`), ``extractive`` is used instead and ``note`` says
    so; otherwise ``note`` is None. An unknown name or a bad spec raises
    ``ValueError``.
    """
    registry = registry or get_registry()
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"summarizer spec {spec!r} is empty; use extractive or "
                         f"llm:openai:MODEL")
    name, _, arg = spec.strip().partition(":")
    cls = registry.summarizer_class(name)
    kwargs: dict[str, Any] = {"model": arg, "base_url": base_url}
    if llm is not None and "llm" in _parameters(cls):
        kwargs["llm"] = llm
    try:
        return registry.new_summarizer(name, **kwargs), None
    except SummaryUnavailable as exc:
        fallback = registry.summarizer_class(ExtractiveSummarizer.name)
        return fallback(), f"{exc}; used the extractive summarizer"


def _parameters(cls: Any) -> set[str]:
    try:
        return set(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        return set()


@hookimpl
def register_summarizers(register: Callable[[str, Any], None]) -> None:
    """Register ``extractive`` and (by name, imported when used) ``llm``."""
    register(ExtractiveSummarizer.name, ExtractiveSummarizer)
    register("llm", LLM_SUMMARIZER)
