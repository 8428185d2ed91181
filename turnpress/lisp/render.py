"""Turning values into text for ``str``, ``println`` and error messages, within a budget.

``to_clojure`` renders a whole value; a value can be huge (or share structure so
that its text would be exponentially long), so these helpers first copy just the
part of the value whose text fits the budget, counting the walk against the step
limit, and only then call ``to_clojure``. The first ``n`` characters are always
exactly those of the full rendering.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from turnpress.core.clojure import to_clojure
from turnpress.core.model import Fn, Keyword
from turnpress.lisp.errors import LispError

__all__ = ["render_prefix", "short", "to_str"]


class _Pruner:
    """Copies the part of a value whose rendering covers the first ``budget`` chars."""

    def __init__(self, ctx: Any, budget: int) -> None:
        self.ctx = ctx
        self.left = budget

    def prune(self, v: Any) -> Any:
        """The part of ``v`` to render, using up the character budget as it goes."""
        t = type(v)
        if v is None or t is bool:
            self.left -= 3
            return v
        if t is str:
            if len(v) + 2 > self.left:
                keep = max(self.left, 0) + 1
                self.left = -1
                return v[:keep]
            self.left -= len(v) + 2
            return v
        if t is int or t is float:
            self.left -= 1
            return v
        if t is Keyword:
            self.left -= len(v.name) + 1
            return v
        if self.ctx is not None:
            self.ctx.charge(1)
        if isinstance(v, Fn):
            self.left -= 5
            return v
        if isinstance(v, (list, tuple)):
            self.left -= 2
            out = []
            for i, x in enumerate(v):
                if self.left < 0:
                    break
                if i:
                    self.left -= 1
                out.append(self.prune(x))
            return out
        if isinstance(v, Mapping):
            self.left -= 2
            out_map = {}
            for i, (k, x) in enumerate(v.items()):
                if self.left < 0:
                    break
                self.left -= 2 if i else 1
                out_map[k] = self.prune(x)
            return out_map
        if isinstance(v, (set, frozenset)):
            if self.ctx is not None:
                self.ctx.charge(len(v))
            self.left -= 3 + len(v)
            return v
        self.left -= 10
        return v


def render_prefix(value: Any, ctx: Any, budget: int) -> str:
    """The rendering of ``value`` (``to_clojure`` syntax), cut to at most ``budget`` chars."""
    pruned = _Pruner(ctx, budget).prune(value)
    try:
        text = to_clojure(pruned, max_chars=budget,
                          tick=ctx.check if ctx is not None else None)[0]
    except RecursionError:
        raise LispError("depth_limit", "value nested too deeply to print") from None
    return text[:budget]


def to_str(value: Any, ctx: Any, max_chars: int) -> str:
    """Clojure ``str`` of one value: ``nil`` -> ``""``, strings raw, others as Clojure text.

    Raises ``size_limit`` if the text would be longer than ``max_chars``.
    """
    t = type(value)
    if t is str:
        return value
    if value is None:
        return ""
    if t is int:
        if value.bit_length() > 14000:
            raise LispError("size_limit", "integer too large to turn into text")
        return str(value)
    if t is bool:
        return "true" if value else "false"
    if t is Keyword:
        return ":" + value.name
    text = render_prefix(value, ctx, max_chars + 1)
    if len(text) > max_chars:
        raise LispError("size_limit",
                        f"string too long: more than {max_chars} characters")
    return text


def short(value: Any, limit: int = 60) -> str:
    """A short rendering for error messages (a few items, a few dozen chars)."""
    try:
        text = to_clojure(value, limit=3, printable_limit=limit)[0]
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 2 * limit else text[: 2 * limit] + "..."
