"""Crossing between PTC-Lisp values and the plain Python values tools work with.

Tools get fresh copies (so a tool can never change a Lisp value), with keywords
turned into their name strings; what a tool returns is copied into Lisp values
(tuples become lists, sets frozensets). Both walks count against the step limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from turnpress.core.model import Keyword

__all__ = ["from_python", "to_python"]

_PLAIN = frozenset({str, int, float, bool, type(None)})


def _key(k: Any, ctx: Any) -> Any:
    t = type(k)
    if t in _PLAIN:
        return k
    if t is Keyword:
        return k.name
    if isinstance(k, tuple):
        ctx.charge(1)
        return tuple(_key(x, ctx) for x in k)
    if isinstance(k, frozenset):
        ctx.charge(1)
        return frozenset(_key(x, ctx) for x in k)
    return k


def to_python(value: Any, ctx: Any) -> Any:
    """A tool argument: keywords -> strings, vectors -> lists, maps -> dicts, sets -> sets."""
    t = type(value)
    if t in _PLAIN:
        return value
    if t is Keyword:
        return value.name
    ctx.charge(1 + (len(value) >> 3 if hasattr(value, "__len__") else 0))
    if isinstance(value, (list, tuple)):
        return [to_python(x, ctx) for x in value]
    if isinstance(value, Mapping):
        return {_key(k, ctx): to_python(v, ctx) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return {_key(x, ctx) for x in value}
    return value


def from_python(value: Any, ctx: Any) -> Any:
    """A tool result as a Lisp value: lists/tuples -> list, dicts -> dict, sets -> frozenset."""
    t = type(value)
    if t in _PLAIN or t is Keyword:
        return value
    ctx.charge(1 + (len(value) >> 3 if hasattr(value, "__len__") else 0))
    if isinstance(value, (list, tuple)):
        return [from_python(x, ctx) for x in value]
    if isinstance(value, Mapping):
        return {k: from_python(v, ctx) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return frozenset(value)
    return value
