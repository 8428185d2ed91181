"""Checking a strategy's ``cache_breakpoints()`` result before a provider shape uses it,
and naming a strategy (and its plugin) in what it got wrong."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from turnpress.core.errors import PluginError
from turnpress.core.registry import get_registry

__all__ = ["BreakpointError", "breakpoint_problem", "check_breakpoints", "strategy_failure",
           "strategy_origin"]

SHAPE = "a list of (message_index: int, offset: int | None) pairs"


class BreakpointError(ValueError):
    """A strategy's ``cache_breakpoints()`` returned something that is not breakpoints."""


def breakpoint_problem(raw: Any, count: int | None = None) -> str | None:
    """What is wrong with ``raw`` as breakpoints of ``count`` messages, or ``None``.

    Each breakpoint is a pair ``(message_index, offset)``: ``message_index`` an int
    in ``range(count)`` (not checked when ``count`` is ``None``), ``offset`` a
    non-negative int or ``None``.
    """
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
        return f"got {type(raw).__name__} {raw!r:.60}, expected {SHAPE}"
    for k, point in enumerate(raw):
        if not isinstance(point, (tuple, list)) or len(point) != 2:
            return f"item {k} is {point!r:.60}, expected a (message_index, offset) pair"
        index, offset = point
        if isinstance(index, bool) or not isinstance(index, int):
            return (f"item {k} {tuple(point)!r:.60}: the message index must be an int, "
                    f"got {type(index).__name__}")
        if offset is not None and (isinstance(offset, bool) or not isinstance(offset, int)
                                   or offset < 0):
            return (f"item {k} {tuple(point)!r:.60}: the offset must be a non-negative int "
                    f"or None (the whole message)")
        if count is not None and not 0 <= index < count:
            has = (f"has {count} message{'' if count == 1 else 's'}, 0..{count - 1}"
                   if count > 0 else "has no messages")
            return (f"item {k} {tuple(point)!r:.60}: message index {index} is out of range "
                    f"(the prompt {has})")
    return None


def check_breakpoints(raw: Any, count: int, strategy: Any) -> list[tuple[int, int | None]]:
    """``raw`` (what ``strategy.cache_breakpoints()`` returned for a prompt of ``count``
    messages) as a list of pairs; a bad result raises :class:`BreakpointError`
    naming the strategy and, for a third-party one, its plugin."""
    problem = breakpoint_problem(raw, count)
    if problem is not None:
        raise BreakpointError(f"{strategy_origin(strategy)}: cache_breakpoints() returned "
                              f"a bad result: {problem}")
    return [(index, offset) for index, offset in raw]


def _plugin_of(strategy: Any) -> Any:
    """The third-party plugin that registered ``strategy`` (an instance or its class),
    or None for a built-in or unregistered one."""
    cls = strategy if isinstance(strategy, type) else type(strategy)
    try:
        owner = get_registry().strategy_owner(cls)
    except Exception:  # the registry itself is broken: name the strategy only
        owner = None
    return None if owner is None or owner.builtin else owner


def strategy_origin(strategy: Any) -> str:
    """``strategy 'x'``, plus ``of plugin ...`` when a third-party plugin registered it
    (``strategy``: an instance or its class)."""
    cls = strategy if isinstance(strategy, type) else type(strategy)
    name = getattr(strategy, "name", "") or cls.__name__
    owner = _plugin_of(strategy)
    return f"strategy {name!r}" if owner is None else f"strategy {name!r} of {owner.source}"


def strategy_failure(strategy: Any, exc: BaseException) -> str | None:
    """One line for what went wrong while ``strategy`` built a prompt, or None for a
    built-in strategy's own bug (the caller re-raises it, traceback and all).

    A ``ValueError`` (a bad option, a :class:`TemplateProblem`...) or a
    :class:`PluginError` is its message; any other exception from a third-party
    strategy is ``strategy 'x' of plugin ... failed: Type: message``, or its message
    alone when that names the strategy already (``check_messages``'s errors).
    """
    if isinstance(exc, (ValueError, PluginError)):
        return str(exc)
    if _plugin_of(strategy) is None:
        return None
    origin = strategy_origin(strategy)
    if str(exc).startswith(origin + " "):  # a check that named it already (a bad message)
        return str(exc)
    return f"{origin} failed: {type(exc).__name__}: {exc}"
