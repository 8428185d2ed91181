"""Render turns into messages: the one render path, ``render`` and its arguments.

The core knows no particular strategy: strategies come from the
``register_strategies`` hook. :func:`prompt_arguments` says what "the prompt of turn
n" of a run is; :func:`render` checks its arguments, finds the strategy and the
run's :class:`RenderContext` and returns the strategy's messages, checked
(:func:`check_messages`). That preparation is done once per prompt by :func:`prepare`
(its arguments in one :class:`RenderOptions`), and :func:`render`,
:func:`render_with_breakpoints`, :func:`render_with_calls` and :func:`model_calls` ask
the one :class:`PreparedRender` for what they return. The pieces live beside this
module and are exported here too: the Strategy contract (``core.strategy``), finding a
strategy (``core.strategy_lookup``), the render context (``core.render_context``) and
the history helpers strategies share (``core.history``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from turnpress.core.breakpoints import check_breakpoints
from turnpress.core.errors import a_or_an
from turnpress.core.history import (
    defined_names,
    error_message,
    has_printed,
    last_items,
    newest_items,
    printed_lines,
)
from turnpress.core.message_checks import (
    PART_SHAPE,
    check_messages,
    check_prompt,
    content_part_problem,
)
from turnpress.core.model import Message, Turn, coerce_tools
from turnpress.core.pricing import CacheRules, Price, resolve_pricing
from turnpress.core.registry import get_registry
from turnpress.core.render_context import (
    ARG_LIMIT,
    ARG_PRINTABLE_LIMIT,
    SAMPLE_LIMIT,
    SAMPLE_PRINTABLE_LIMIT,
    USER_NAMESPACE_ORDER,
    NamespaceView,
    RenderContext,
)
from turnpress.core.run_cache import RunCache, run_cache_for
from turnpress.core.strategy import (
    BASELINE_STRATEGY,
    DEFAULT_STRATEGY,
    Breakpoint,
    Compression,
    Strategy,
    StrategyNotApplicable,
    breakpoints_for,
    option_defaults,
)
from turnpress.core.strategy_lookup import (
    get_strategy,
    normalize,
    parse_strategy_spec,
    strategy_names,
)
from turnpress.core.templates import resolve_template_dirs

__all__ = [
    "ARG_LIMIT",
    "ARG_PRINTABLE_LIMIT",
    "BASELINE_STRATEGY",
    "DEFAULT_STRATEGY",
    "PART_SHAPE",
    "SAMPLE_LIMIT",
    "SAMPLE_PRINTABLE_LIMIT",
    "USER_NAMESPACE_ORDER",
    "Breakpoint",
    "Compression",
    "NamespaceView",
    "PreparedRender",
    "RenderContext",
    "RenderOptions",
    "RunCache",
    "RunState",
    "Strategy",
    "StrategyNotApplicable",
    "check_messages",
    "content_part_problem",
    "copy_json",
    "defined_names",
    "error_message",
    "get_strategy",
    "handed_out",
    "has_printed",
    "last_items",
    "model_calls",
    "newest_items",
    "normalize",
    "option_defaults",
    "parse_strategy_spec",
    "prepare",
    "printed_lines",
    "prompt_arguments",
    "render",
    "render_with_breakpoints",
    "render_with_calls",
    "run_cache_for",
    "strategy_model_calls",
    "strategy_names",
]


class RunLike(Protocol):
    """What :func:`prompt_arguments` reads from a run: a :class:`~turnpress.core.trace.Trace`,
    a :class:`RunState`, or anything with these attributes (``preamble`` and ``name``
    are optional)."""

    mission: str
    system_prompt: str
    max_turns: int
    tools: Mapping[str, Any]
    data: Mapping[str, Any]
    turns: Sequence[Turn]


@dataclass(frozen=True)
class RunState:
    """A run in progress, as the render path needs it (the agent loop's view of a
    :class:`~turnpress.core.trace.Trace`). Nothing is copied, so the tools and data
    keep their identity from turn to turn and their sections are rendered once."""

    mission: str
    system_prompt: str
    max_turns: int
    tools: Mapping[str, Any]
    data: Mapping[str, Any]
    turns: tuple[Turn, ...] = ()
    preamble: tuple[Mapping[str, Any], ...] = ()
    name: str = ""


def prompt_arguments(run: RunLike, n: int) -> dict[str, Any]:
    """The arguments of :func:`render` (all but ``compression`` and ``template_dirs``)
    for the prompt of turn ``n`` (1-based) of ``run``.

    This is the one place that says what "the prompt of turn n" is: the turns before
    it (``turns[:n-1]``) and ``turns_left = max_turns - (n - 1)`` (ARC-006: counted
    from turns, never from messages). ``n`` goes from 1 to ``len(turns) + 1``; the
    last one is the next prompt, the one a live agent sends next (turn 1 of a run
    with no turns). ``render``, ``trace show``, ``compare`` and the agent loop all
    come through here. Anything else raises ``ValueError`` naming the run and the
    valid range.
    """
    turns = tuple(run.turns)
    count = len(turns)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= count + 1:
        name = getattr(run, "name", "") or "(unnamed)"
        raise ValueError(f"trace {name} has {count} turn{'' if count == 1 else 's'}; "
                         f"turn must be from 1 to {count + 1} ({count + 1} is the next "
                         f"prompt), got {n!r}")
    return {"turns": turns[: n - 1], "mission": run.mission,
            "system_prompt": run.system_prompt, "tools": run.tools, "data": run.data,
            "turns_left": run.max_turns - (n - 1),
            "preamble": tuple(getattr(run, "preamble", ()))}


@dataclass(frozen=True)
class RenderOptions:
    """Everything :func:`render` takes besides the turns and the memory: its keyword
    arguments, in one value (see :func:`render` for each). :func:`render`,
    :func:`render_with_breakpoints`, :func:`render_with_calls` and :func:`model_calls`
    take them one by one; :func:`prepare` takes this."""

    mission: str
    system_prompt: str = ""
    tools: Mapping[str, Any] | None = None
    data: Mapping[str, Any] | None = None
    turns_left: int | None = None
    compression: Compression = True
    template_dirs: Iterable[str | os.PathLike[str]] = ()
    preamble: Iterable[Mapping[str, Any]] = ()
    cache: str | CacheRules | None = None
    price: str | Price | None = None


@dataclass(frozen=True)
class PreparedRender:
    """One prompt, prepared once (:func:`prepare`): the strategy, the turns, the memory
    and the run's :class:`RenderContext`, its arguments checked. Its methods call the
    strategy; what they return is the strategy's own objects, not copies (the public
    functions hand out copies: :func:`handed_out`)."""

    strategy: Any
    turns: tuple[Turn, ...]
    memory: Mapping[str, Any]
    ctx: RenderContext

    def messages(self) -> list[Message]:
        """The strategy's messages, checked (:func:`check_prompt`: at least one, each
        as :func:`check_messages` wants it)."""
        return check_prompt(self.strategy.to_messages(self.turns, self.memory, self.ctx),
                            self.strategy)

    def breakpoints(self, messages: Sequence[Message]) -> list[Breakpoint]:
        """The strategy's cache breakpoints for ``messages`` (what :meth:`messages`
        returned), checked (see :func:`render_with_breakpoints`)."""
        return check_breakpoints(breakpoints_for(self.strategy, self.turns, self.memory,
                                                 self.ctx, messages),
                                 len(messages), self.strategy)

    def model_calls(self) -> tuple[Any, ...]:
        """The model calls the strategy made to build this prompt (:func:`model_calls`)."""
        return strategy_model_calls(self.strategy, self.turns, self.memory, self.ctx)


#: the last turns tuple :func:`prepare` checked (a tuple cannot change)
_CHECKED: list[tuple[Turn, ...]] = [()]


def prepare(turns: Iterable[Turn], memory: Mapping[str, Any] | None,
            options: RenderOptions) -> PreparedRender:
    """Check ``render()``'s arguments (``options``: its keyword arguments) and find the
    strategy and the run's :class:`RenderContext`, once for everything asked of the
    prompt. ``memory=None``: the memory of the last turn (``{}`` before the first)."""
    o = options
    turns = tuple(turns)
    if turns is not _CHECKED[0]:  # the tuple checked last time (a live loop's, asked again)
        if not set(map(type, turns)) <= {Turn}:  # one C-speed pass; subclasses checked below
            for i, turn in enumerate(turns):
                if not isinstance(turn, Turn):
                    raise TypeError(f"turns[{i}] is {a_or_an(type(turn).__name__)}, not a Turn")
        _CHECKED[0] = turns  # held, so its id is not another tuple's
    if not isinstance(o.mission, str):
        raise TypeError(f"mission must be a string, got {type(o.mission).__name__}")
    turns_left = o.turns_left
    known = turns_left is not None
    if not known:
        turns_left = 0  # not known: no turns-left line (RenderContext.turns_left_known)
    elif isinstance(turns_left, bool) or not isinstance(turns_left, int):
        raise TypeError(f"turns_left must be an integer or None, got {turns_left!r}")
    if memory is None:
        memory = turns[-1].memory if turns else {}
    strategy = get_strategy(o.compression)
    rules, cost = resolve_pricing(o.cache, o.price)
    registry = get_registry()
    dirs = resolve_template_dirs(o.template_dirs)
    shared = run_cache_for(o.tools, o.data, dirs, registry)
    if shared.tools is None or shared.data is None:
        shared.tools, shared.data = coerce_tools(o.tools), dict(o.data or {})
    ctx = RenderContext(
        mission=o.mission,
        system_prompt=o.system_prompt,
        tools=shared.tools,
        data=shared.data,
        turns_left=turns_left,  # type: ignore[arg-type]
        template_dirs=dirs,
        registry=registry,
        preamble=tuple(o.preamble),  # type: ignore[arg-type]
        run_cache=shared,
        turns_left_known=known,
        cache=rules,
        price=cost,
    )
    return PreparedRender(strategy, turns, memory, ctx)


def strategy_model_calls(strategy: Any, turns: Sequence[Turn], memory: Mapping[str, Any],
                         ctx: RenderContext) -> tuple[Any, ...]:
    """``strategy.model_calls(turns, memory, ctx)`` as a tuple, or ``()`` for a strategy
    without that method (every extractive one): the one lookup of a strategy's own
    model calls, for :func:`model_calls` and ``compare``."""
    method = getattr(strategy, "model_calls", None)
    return tuple(method(turns, memory, ctx)) if method is not None else ()


def render(
    turns: Iterable[Turn],
    memory: Mapping[str, Any] | None = None,
    *,
    mission: str,
    system_prompt: str = "",
    tools: Mapping[str, Any] | None = None,
    data: Mapping[str, Any] | None = None,
    turns_left: int | None,
    compression: Compression = True,
    template_dirs: Iterable[str | os.PathLike[str]] = (),
    preamble: Iterable[Mapping[str, Any]] = (),
    cache: str | CacheRules | None = None,
    price: str | Price | None = None,
) -> list[Message]:
    """Render the history into the messages for the next LLM call.

    ``memory=None`` means the memory of the last turn (``{}`` before the first).
    ``compression`` picks the strategy (see :func:`normalize`); ``False`` renders
    the ``full-history`` baseline. ``preamble`` is an imported transcript's
    original messages before its first turn (``Trace.preamble``). ``turns_left=None``:
    not known, no turns-left line (``RenderContext.turns_left_known``). ``cache`` and
    ``price`` tell the strategy the prompt cache and the price list
    (``RenderContext.cache`` / ``.price``; None: the ``openai`` cache, priced
    ``openai-gpt-4.1``). Pure: the same input gives the same output.
    """
    options = RenderOptions(mission, system_prompt, tools, data, turns_left, compression,
                            template_dirs, preamble, cache, price)
    return handed_out(prepare(turns, memory, options).messages())


def render_with_calls(
    turns: Iterable[Turn],
    memory: Mapping[str, Any] | None = None,
    *,
    mission: str,
    system_prompt: str = "",
    tools: Mapping[str, Any] | None = None,
    data: Mapping[str, Any] | None = None,
    turns_left: int | None,
    compression: Compression = True,
    template_dirs: Iterable[str | os.PathLike[str]] = (),
    preamble: Iterable[Mapping[str, Any]] = (),
    cache: str | CacheRules | None = None,
    price: str | Price | None = None,
) -> tuple[list[Message], tuple[Any, ...]]:
    """``(render(...), model_calls(...))`` for the same arguments, prepared once: the
    messages, then the model calls the strategy made to build them (what the agent
    loop needs each turn)."""
    options = RenderOptions(mission, system_prompt, tools, data, turns_left, compression,
                            template_dirs, preamble, cache, price)
    prepared = prepare(turns, memory, options)
    messages = handed_out(prepared.messages())
    return messages, prepared.model_calls()


def model_calls(
    turns: Iterable[Turn],
    memory: Mapping[str, Any] | None = None,
    *,
    mission: str,
    system_prompt: str = "",
    tools: Mapping[str, Any] | None = None,
    data: Mapping[str, Any] | None = None,
    turns_left: int | None,
    compression: Compression = True,
    template_dirs: Iterable[str | os.PathLike[str]] = (),
    preamble: Iterable[Mapping[str, Any]] = (),
    cache: str | CacheRules | None = None,
    price: str | Price | None = None,
) -> tuple[Any, ...]:
    """The model calls the strategy made itself to build the prompt :func:`render` gives
    for the same arguments (a summary-based strategy's summarization calls), each with
    ``input_tokens`` and ``output_tokens``; ``()`` for a strategy without a
    ``model_calls(turns, memory, ctx)`` method (every extractive one)."""
    options = RenderOptions(mission, system_prompt, tools, data, turns_left, compression,
                            template_dirs, preamble, cache, price)
    return prepare(turns, memory, options).model_calls()


def handed_out(messages: Sequence[Message]) -> list[Message]:
    """Copies of the messages for the caller to keep or change. Strategies reuse a
    message's dict (and a transcript turn's own messages) from one prompt to the next;
    a caller that adds ``cache_control`` to the last message must not change them."""
    return [copy_json(m) for m in messages]  # type: ignore[misc]


def copy_json(value: Any, depth: int = 0) -> Any:
    """A copy of the dicts and lists in a JSON-like value (strings, numbers and other
    objects are shared; parts nested past 64 levels, which no real message has, are
    shared too). Only the containers are walked: a dict of strings is one C-speed copy."""
    if depth > 64:
        return value
    kind = type(value)
    if kind is dict:
        out = value.copy()
        for key, item in value.items():
            if type(item) is dict or type(item) is list:
                out[key] = copy_json(item, depth + 1)
        return out
    if kind is list:
        return [copy_json(item, depth + 1) if type(item) is dict or type(item) is list
                else item for item in value]
    return value


def render_with_breakpoints(
    turns: Iterable[Turn],
    memory: Mapping[str, Any] | None = None,
    *,
    mission: str,
    system_prompt: str = "",
    tools: Mapping[str, Any] | None = None,
    data: Mapping[str, Any] | None = None,
    turns_left: int | None,
    compression: Compression = True,
    template_dirs: Iterable[str | os.PathLike[str]] = (),
    preamble: Iterable[Mapping[str, Any]] = (),
    cache: str | CacheRules | None = None,
    price: str | Price | None = None,
) -> tuple[list[Message], list[Breakpoint]]:
    """``render(...)``'s messages and the strategy's cache breakpoints for them.

    Takes exactly :func:`render`'s arguments; the breakpoints come from
    ``strategy.cache_breakpoints`` called with the same turns, memory and context, or
    for a strategy without its own, the end of the leading system messages and the
    end of the prompt (:func:`~turnpress.core.strategy.breakpoints_for`; a bad result
    raises :class:`~turnpress.core.breakpoints.BreakpointError`, a
    ``ValueError`` naming the strategy and its plugin). Feed both to
    :func:`turnpress.core.providers.to_anthropic`.
    """
    options = RenderOptions(mission, system_prompt, tools, data, turns_left, compression,
                            template_dirs, preamble, cache, price)
    prepared = prepare(turns, memory, options)
    messages = prepared.messages()
    return handed_out(messages), prepared.breakpoints(messages)
