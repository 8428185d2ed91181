"""Small facts about a run's turns that strategies and the render context share.

What printed, what a turn defined, a failed turn's message, and the last items of a
history (newest first, so the cost depends on the limit, not on the run's length).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields, is_dataclass
from typing import Any

from turnpress.core.model import Fn, Turn

__all__ = ["defined_names", "error_message", "has_printed", "last_items", "newest_items",
           "printed_lines"]


def has_printed(turns: Iterable[Turn]) -> bool:
    """Whether any successful turn printed (then samples give way to output)."""
    return any(t.prints for t in turns if t.success)


def defined_names(memory: Mapping[str, Any],
                  previous: Mapping[str, Any] | None = None) -> list[str]:
    """The names ``memory`` defines that ``previous`` lacked or held differently.

    This is what one turn defined: ``defined_names(turn.memory, previous_turn.memory)``,
    in memory order. A value counts when its type, value or docstring changed; a
    function when anything but its return type changed (calling a function records
    its return type, it does not redefine it).
    """
    previous = previous or {}
    docs = getattr(memory, "docs", None) or {}
    previous_docs = getattr(previous, "docs", None) or {}
    return [
        name for name, value in memory.items()
        if name not in previous or not _same_definition(value, previous[name])
        or docs.get(name) != previous_docs.get(name)
    ]


def _same_definition(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        if isinstance(a, Fn) and is_dataclass(a):
            return all(bool(getattr(a, f.name) == getattr(b, f.name))
                       for f in fields(a) if f.name != "return_type")
        return bool(a == b)
    except Exception:  # values that refuse comparison count as redefined
        return False


def printed_lines(turn: Turn) -> int:
    """How many lines a turn printed (a println call of n lines counts n)."""
    return sum(text.count("\n") + 1 for text in turn.prints)


def error_message(turn: Turn) -> str:
    """The message of a failed turn's :class:`Failure`."""
    error = turn.result
    return getattr(error, "message", None) or str(error)


def last_items(groups: Iterable[Sequence[Any]], limit: int) -> list[Any]:
    """The last ``limit`` items of the concatenated ``groups``, oldest first."""
    return newest_items(reversed(list(groups)), limit)


def newest_items(groups_newest_first: Iterable[Sequence[Any]], limit: int) -> list[Any]:
    """:func:`last_items` given the groups newest first (``reversed(turns)``): it stops
    once it has ``limit`` items, so the cost depends on ``limit``, not on the history."""
    if limit <= 0:
        return []
    picked: list[Any] = []
    for group in groups_newest_first:
        need = limit - len(picked)
        picked.extend(reversed(group[-need:]))
        if len(picked) >= limit:
            break
    picked.reverse()
    return picked
