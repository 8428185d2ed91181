"""Built-in plugin: ``summary-compaction``, the oldest turns replaced by one summary.

What provider and framework compaction does (Anthropic's ``compact_20260112`` edit,
OpenAI's ``compact_threshold``, LangChain's ``SummarizationMiddleware``, OpenHands'
``LLMSummarizingCondenser``, Claude Code's ``/compact``): the prompt is the full
history until it passes ``trigger`` tokens; then every turn but the last ``keep``
is replaced by one summary message (a ``register_summarizers`` summarizer's text),
and later turns append after it until the trigger is passed again, when the
previous summary and the turns since are summarised again.

The summarization calls and the cache break after each summary are what this
costs: :meth:`SummaryCompaction.model_calls` tells ``compare`` the calls made for a
prompt, which it bills as their own rows (DESIGN §11).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

from turnpress.core.compression import Breakpoint, RenderContext, Strategy
from turnpress.core.hookspecs import hookimpl
from turnpress.core.message_text import message_body
from turnpress.core.model import Message, Turn
from turnpress.core.summaries import Summary
from turnpress.core.tokens import DEFAULT_TOKENIZER, get_tokenizer
from turnpress.plugins.full_history import FullHistory, TurnWalk
from turnpress.plugins.summarizers import SummaryRuntime, build_summarizer, default_runtime

__all__ = ["DEFAULT_KEEP", "DEFAULT_TRIGGER", "SummaryCompaction"]

DEFAULT_TRIGGER = 150_000
"""Tokens: the default trigger of Anthropic's server-side ``compact_20260112`` edit (150k
input tokens; it accepts no less than 50k). LangChain's ``SummarizationMiddleware`` has
no default trigger (its documentation's example uses 4000 tokens)."""

DEFAULT_KEEP = 10
"""Turns: LangChain's default ``keep=("messages", 20)``; a turn of a tool-calling agent
is two messages (the assistant's call and its result)."""


@dataclass(frozen=True)
class _State:
    """The prompt after some turns: ``folded`` turns replaced by ``summary`` (shown as
    ``message``), the ``calls`` made for this prompt, its tokens, and when a summary
    was last declined for not being smaller than what it would replace."""

    folded: int
    summary: Summary | None
    message: Message | None
    calls: tuple[Summary, ...]
    tokens: int
    #: the turn after which the last summary was declined (never larger), or 0
    declined: int = 0


class SummaryCompaction(Strategy):
    """Full history until the prompt passes ``trigger`` tokens, then all but the last
    ``keep`` turns become one summary message.

    Options: ``trigger`` (150000 tokens, >= 1) and ``keep`` (10 turns, >= 0), counted
    with ``tokenizer`` (``o200k_base``); ``summarizer``: ``extractive`` (turnpress's
    coalesced view, no model), ``llm`` (the model of the agent that runs it, through
    its adapter; in ``compare`` and ``compress()``, where there is none, this falls
    back to ``extractive`` and :attr:`note` says so), ``llm:openai:MODEL`` or
    ``llm:anthropic:MODEL`` (that model, ``base_url`` for another server), or a
    plugin's summarizer. The summary message is a USER message after the head
    (system prompt and mission, or a transcript's preamble), followed by the kept
    turns as sent, so tool calls stay paired with their results. Summaries are kept
    on disk (:class:`~turnpress.plugins.summarizers.SummaryRuntime`), so the same
    history is summarised once. Never larger: a summary that is not smaller than the
    messages it would replace is not used (its call is still billed) and the turns
    stay; the next try comes once ``keep`` more turns have been added.
    """

    name = "summary-compaction"

    def __init__(self, *, trigger: int = DEFAULT_TRIGGER, keep: int = DEFAULT_KEEP,
                 summarizer: str = "llm", base_url: str = "",
                 tokenizer: str = DEFAULT_TOKENIZER) -> None:
        self.trigger = self.check_int("trigger", trigger, minimum=1)
        self.keep = self.check_int("keep", keep)
        if not isinstance(summarizer, str) or not summarizer.strip():
            raise ValueError(f"strategy {self.name!r}: option 'summarizer' must be "
                             f"extractive, llm, llm:openai:MODEL or llm:anthropic:MODEL, "
                             f"got {summarizer!r}")
        if not isinstance(base_url, str):
            raise ValueError(f"strategy {self.name!r}: option 'base_url' must be a URL "
                             f"string, got {base_url!r}")
        self.summarizer = summarizer.strip()
        self.base_url = base_url
        self.tokenizer = tokenizer
        get_tokenizer(tokenizer)  # an unknown name fails here, not at the first count
        try:
            self._summarizer, self.note = build_summarizer(self.summarizer,
                                                           base_url=base_url)
        except ValueError as exc:
            raise ValueError(f"strategy {self.name!r}: option 'summarizer': {exc}") from None
        #: the disk cache and budget of the summaries (see :meth:`configured`)
        self.runtime: SummaryRuntime = default_runtime()
        self._full = FullHistory()
        self._walk: TurnWalk[_State] = TurnWalk()

    def configured(self, *, runtime: SummaryRuntime | None = None,
                   llm: Callable[..., Any] | None = None) -> SummaryCompaction:
        """A copy that keeps its summaries in ``runtime`` (disk cache, budget) and, with
        ``llm``, makes a bare ``llm`` summarizer call that adapter (an agent's own)."""
        twin = copy.copy(self)
        twin._full = FullHistory()
        twin._walk = TurnWalk()
        if runtime is not None:
            twin.runtime = runtime
        if llm is not None and self.summarizer == "llm":
            twin._summarizer, twin.note = build_summarizer(self.summarizer,
                                                           base_url=self.base_url, llm=llm)
        return twin

    @property
    def summarizer_name(self) -> str:
        """The summarizer in use (``extractive`` after a fallback)."""
        return str(self._summarizer.name)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_walk"] = TurnWalk()
        return state

    # -- the schedule ---------------------------------------------------------------

    def _tokens(self, messages: Sequence[Message], ctx: RenderContext) -> int:
        """The tokens of ``messages``, each counted as ``message_text`` gives it, by the
        run's counter (:meth:`RenderContext.token_counter`: what ``compare`` counted
        already is not encoded again)."""
        segment = ctx.token_counter(self.tokenizer).segment
        return sum(segment(m["role"], message_body(m)).count for m in messages)

    def _states(self, turns: Sequence[Turn], ctx: RenderContext) -> tuple[_State, ...]:
        """The state after each turn (``[i]``: after ``i + 1`` turns)."""
        pairs = self._full.pairs(ctx, turns)
        head_tokens: list[int] = []  # counted once, and only when a new state needs it

        def start() -> _State:
            if not head_tokens:
                head_tokens.append(self._tokens(self._full.head(turns, ctx), ctx))
            return _State(0, None, None, (), head_tokens[0])

        tokens_key = (self.name, "tokens", self.tokenizer, ctx.turns_left + len(turns))
        key = (self.name, self.trigger, self.keep, self.summarizer, self.tokenizer,
               id(self._summarizer), ctx.turns_left + len(turns), ctx.mission)

        def make(pos: int, before: list[_State]) -> _State:
            prev = before[-1] if before else start()
            tokens = prev.tokens + ctx.per_turn(turns[pos - 1], tokens_key,
                                                lambda: self._tokens(pairs[pos - 1], ctx))
            due = tokens > self.trigger and pos - prev.folded > self.keep
            if due and prev.declined and pos - prev.declined <= self.keep:
                due = False  # declined lately: try again once keep more turns came
            if not due:
                return _State(prev.folded, prev.summary, prev.message, (), tokens,
                              prev.declined)
            folded = pos - self.keep
            summary = self.runtime.summarize(
                self._summarizer, turns[:folded], ctx,
                previous=prev.summary.text if prev.summary else None, start=prev.folded)
            message = ctx.message("user", ctx.template(
                "summary_compaction/summary.j2", first=1, last=folded, summary=summary.text))
            size = self._tokens([message], ctx)
            pair_tokens = [ctx.per_turn(t, tokens_key, lambda p=p: self._tokens(p, ctx))
                           for t, p in zip(turns[prev.folded:pos], pairs[prev.folded:pos],
                                           strict=True)]
            replaced = sum(pair_tokens[:folded - prev.folded]) + (
                self._tokens([prev.message], ctx) if prev.message is not None else 0)
            if size >= replaced:  # never larger: the turns stay; the call is billed
                return _State(prev.folded, prev.summary, prev.message, (summary,), tokens,
                              pos)
            return _State(folded, summary, message, (summary,),
                          start().tokens + size + sum(pair_tokens[folded - prev.folded:]))

        return self._walk.pieces(ctx, turns, key, make)

    def _state(self, turns: Sequence[Turn], ctx: RenderContext) -> _State | None:
        states = self._states(turns, ctx)
        return states[-1] if states else None

    def to_messages(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                    ctx: RenderContext) -> list[Message]:
        """The head, the summary message (once a compaction happened), the kept turns."""
        messages = self._full.head(turns, ctx)
        state = self._state(turns, ctx)
        if state is None or state.message is None:
            messages.extend(chain.from_iterable(self._full.pairs(ctx, turns)))
            return messages
        messages.append(state.message)
        messages.extend(chain.from_iterable(self._full.pairs(ctx, turns)[state.folded:]))
        return messages

    def model_calls(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                    ctx: RenderContext) -> tuple[Summary, ...]:
        """The summarization calls made to build this prompt (none, or the one of the
        compaction it starts with): ``compare`` bills each as its own row."""
        state = self._state(turns, ctx)
        return state.calls if state is not None else ()

    def folded_count(self, turns: Sequence[Turn], ctx: RenderContext) -> int:
        """How many of ``turns`` the summary in this prompt replaces (0: none yet)."""
        state = self._state(turns, ctx)
        return state.folded if state is not None else 0

    def cache_breakpoints(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                          ctx: RenderContext) -> list[Breakpoint]:
        """The end of the head (system prompt and mission, or a transcript's preamble),
        which every prompt repeats, and the end of the prompt (read-only: the next
        prompt repeats it unless it starts with a new summary)."""
        head = len(self._full.head(turns, ctx))
        last = len(self.to_messages(turns, memory, ctx)) - 1
        return sorted({(0, None), (head - 1, None), (last, None)}, key=lambda p: p[0])


@hookimpl
def register_strategies(register: Callable[[type], None]) -> None:
    """Register ``summary-compaction``."""
    register(SummaryCompaction)
