"""``println`` and friends: every call is captured as one entry of the run's prints."""

from __future__ import annotations

from typing import Any

from turnpress.lisp.library.registry import core
from turnpress.lisp.render import render_prefix


def _text(ctx: Any, args: tuple[Any, ...], readable: bool) -> str:
    budget = ctx.limits.print_chars + 1
    parts: list[str] = []
    used = 0
    for x in args:
        if used > budget:
            break
        if type(x) is str and not readable:
            part = x[: budget - used + 1]
        else:
            part = render_prefix(x, ctx, budget - used + 1)
        parts.append(part)
        used += len(part) + 1
    return " ".join(parts)


@core("println", "Print the arguments separated by spaces (strings as they are, other "
      "values as Clojure text); each call is one output entry. Returns nil.",
      category="output", aliases=("print",))
def println(ctx: Any, *args: Any) -> None:
    ctx.emit_print(_text(ctx, args, readable=False))


@core("prn", "Like println, but strings are printed quoted.", category="output")
def prn(ctx: Any, *args: Any) -> None:
    ctx.emit_print(_text(ctx, args, readable=True))
