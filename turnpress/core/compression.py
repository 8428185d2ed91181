"""Render turns into messages: the one render path, ``render`` and its arguments.

The core knows no particular strategy: strategies come from the
``register_strategies`` hook. :func:`prompt_arguments` says what "the prompt of turn
n" of a run is; :func:`render` checks its arguments, finds the strategy and the
run's :class:`RenderContext` and returns the strategy's messages, checked
(:func:`check_messages`). The pieces live beside this module and are exported here
too: the Strategy contract (``core.strategy``), finding a strategy
(``core.strategy_lookup``), the render context (``core.render_context``) and the
history helpers strategies share (``core.history``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from turnpress.core.breakpoints import check_breakpoints
from turnpress.core.history import (
    defined_names,
    error_message,
    has_printed,
    last_items,
    newest_items,
    printed_lines,
)
from turnpress.core.model import MESSAGE_ROLES, Message, Turn, coerce_tools
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
    "SAMPLE_LIMIT",
    "SAMPLE_PRINTABLE_LIMIT",
    "USER_NAMESPACE_ORDER",
    "Breakpoint",
    "Compression",
    "NamespaceView",
    "RenderContext",
    "RunCache",
    "RunState",
    "Strategy",
    "StrategyNotApplicable",
    "check_messages",
    "defined_names",
    "error_message",
    "get_strategy",
    "has_printed",
    "last_items",
    "model_calls",
    "newest_items",
    "normalize",
    "option_defaults",
    "parse_strategy_spec",
    "printed_lines",
    "prompt_arguments",
    "render",
    "render_with_breakpoints",
    "run_cache_for",
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


def _prepare(
    turns: Iterable[Turn],
    memory: Mapping[str, Any] | None,
    *,
    mission: str,
    system_prompt: str,
    tools: Mapping[str, Any] | None,
    data: Mapping[str, Any] | None,
    turns_left: int | None,
    compression: Compression,
    template_dirs: Iterable[str | os.PathLike[str]],
    preamble: Iterable[Mapping[str, Any]] = (),
    cache: str | CacheRules | None = None,
    price: str | Price | None = None,
) -> tuple[Any, tuple[Turn, ...], Mapping[str, Any], RenderContext]:
    """Check ``render()``'s arguments; return (strategy, turns, memory, context)."""
    turns = tuple(turns)
    if not set(map(type, turns)) <= {Turn}:  # one C-speed pass; subclasses are checked below
        for i, turn in enumerate(turns):
            if not isinstance(turn, Turn):
                raise TypeError(f"turns[{i}] is a {type(turn).__name__}, not a Turn")
    if not isinstance(mission, str):
        raise TypeError(f"mission must be a string, got {type(mission).__name__}")
    known = turns_left is not None
    if not known:
        turns_left = 0  # not known: no turns-left line (RenderContext.turns_left_known)
    elif isinstance(turns_left, bool) or not isinstance(turns_left, int):
        raise TypeError(f"turns_left must be an integer or None, got {turns_left!r}")
    if memory is None:
        memory = turns[-1].memory if turns else {}
    strategy = get_strategy(compression)
    rules, cost = resolve_pricing(cache, price)
    registry = get_registry()
    dirs = resolve_template_dirs(template_dirs)
    shared = run_cache_for(tools, data, dirs, registry)
    if shared.tools is None or shared.data is None:
        shared.tools, shared.data = coerce_tools(tools), dict(data or {})
    ctx = RenderContext(
        mission=mission,
        system_prompt=system_prompt,
        tools=shared.tools,
        data=shared.data,
        turns_left=turns_left,
        template_dirs=dirs,
        registry=registry,
        preamble=tuple(preamble),  # type: ignore[arg-type]
        run_cache=shared,
        turns_left_known=known,
        cache=rules,
        price=cost,
    )
    return strategy, turns, memory, ctx


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
    strategy, turns, memory, ctx = _prepare(
        turns, memory, mission=mission, system_prompt=system_prompt, tools=tools, data=data,
        turns_left=turns_left, compression=compression, template_dirs=template_dirs,
        preamble=preamble, cache=cache, price=price)
    return _handed_out(check_messages(strategy.to_messages(turns, memory, ctx), strategy))


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
    strategy, turns, memory, ctx = _prepare(
        turns, memory, mission=mission, system_prompt=system_prompt, tools=tools, data=data,
        turns_left=turns_left, compression=compression, template_dirs=template_dirs,
        preamble=preamble, cache=cache, price=price)
    method = getattr(strategy, "model_calls", None)
    return tuple(method(turns, memory, ctx)) if method is not None else ()


def _handed_out(messages: list[Message]) -> list[Message]:
    """Copies of the messages for the caller to keep or change. Strategies reuse a
    message's dict (and a transcript turn's own messages) from one prompt to the next;
    a caller that adds ``cache_control`` to the last message must not change them."""
    return [_copy_json(m, 0) for m in messages]  # type: ignore[misc]


def _copy_json(value: Any, depth: int) -> Any:
    """A copy of the dicts and lists in a JSON-like value (strings and numbers are
    immutable; parts nested past 64 levels, which no real message has, are shared)."""
    if depth > 64:
        return value
    if type(value) is dict:
        return {k: _copy_json(v, depth + 1) for k, v in value.items()}
    if type(value) is list:
        return [_copy_json(v, depth + 1) for v in value]
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
    strategy, turns, memory, ctx = _prepare(
        turns, memory, mission=mission, system_prompt=system_prompt, tools=tools, data=data,
        turns_left=turns_left, compression=compression, template_dirs=template_dirs,
        preamble=preamble, cache=cache, price=price)
    messages = check_messages(strategy.to_messages(turns, memory, ctx), strategy)
    points = check_breakpoints(breakpoints_for(strategy, turns, memory, ctx, messages),
                               len(messages), strategy)
    return _handed_out(messages), points


_ROLES = MESSAGE_ROLES  # a tuple: a role that is not hashable is just not one of them


def _valid_message(m: Any) -> bool:
    if type(m) is dict:  # the common case, without the abstract-class check
        role = m.get("role")
        if type(role) is str and role in _ROLES:
            content = m.get("content")
            if type(content) is str or type(content) is list:
                return True
    if not isinstance(m, Mapping) or m.get("role") not in _ROLES:
        return False
    content = m.get("content")
    if isinstance(content, str):
        return True
    # provider-shaped messages of an imported transcript (DESIGN §10): list-of-parts
    # content, or no content on an assistant message that calls tools
    return isinstance(content, list) or (content is None and bool(m.get("tool_calls")))


def check_messages(messages: Any, strategy: Any) -> list[Message]:
    """Return ``messages`` if they are a list of ``{role, content}`` dicts, else raise a
    ``TypeError`` naming the strategy and the first bad message.

    ``content`` is a string; messages replayed from an imported transcript may also
    carry ``role: "tool"`` or ``"developer"``, list-of-parts content, or ``None``
    beside ``tool_calls``.
    """
    if not isinstance(messages, list):
        raise TypeError(f"strategy {strategy.name!r} returned {type(messages).__name__}, "
                        f"not a list of messages")
    roles = _ROLES
    for m in messages:  # the common case, {"role": ..., "content": str}, inline
        if type(m) is not dict or type(m.get("content")) is not str:
            break
        role = m.get("role")
        if type(role) is not str or role not in roles:
            break
    else:
        return messages
    for i, m in enumerate(messages):
        if not _valid_message(m):
            raise TypeError(f"strategy {strategy.name!r} returned a bad message at index {i}: "
                            f"{m!r:.200}; each must be {{'role': 'system'|'user'|'assistant', "
                            f"'content': str}}")
    return messages
