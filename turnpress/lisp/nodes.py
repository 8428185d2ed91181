"""Compiled code shapes shared by the compiler and the special forms.

A node is ``node(env) -> value`` where ``env`` is the dict of local variables.
This module holds what both :mod:`turnpress.lisp.compiler` and
:mod:`turnpress.lisp.special_forms` need, so that neither imports the other
at load time (the compiler imports the special-form table; the special forms
only name the :class:`~turnpress.lisp.compiler.Compiler` type).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from turnpress.lisp.errors import LispSyntaxError
from turnpress.lisp.forms import ListForm, MapForm, SetForm, Symbol, VectorForm, position
from turnpress.lisp.values import freeze

__all__ = [
    "WIDE",
    "FnCode",
    "Node",
    "Tail",
    "const",
    "is_literal",
    "literal_value",
    "raiser",
    "symbols_in",
    "weigh",
]

Node = Callable[[dict[str, Any]], Any]


class Tail:
    """A recur target: the loop or function that ``(recur ...)`` jumps back to."""

    __slots__ = ("arity", "what")

    def __init__(self, arity: int, what: str) -> None:
        self.arity = arity
        self.what = what


class FnCode:
    """A user function's compiled parameters and body."""

    __slots__ = ("bind", "body", "rebind", "single")

    def __init__(self, bind: Any, rebind: Any, body: Node, single: str | None = None) -> None:
        self.bind = bind
        self.rebind = rebind
        self.body = body
        self.single = single  # the parameter name, for exactly one plain parameter


def const(value: Any) -> Node:
    """A node that always gives ``value``."""
    return lambda env: value


def raiser(make_error: Callable[[], Exception]) -> Node:
    """A node that raises ``make_error()`` when evaluated."""

    def node(env: dict[str, Any]) -> Any:
        raise make_error()

    return node


def is_literal(form: Any) -> bool:
    """True for forms that are pure data (no symbols, no calls)."""
    t = type(form)
    if t is Symbol or t is ListForm:
        return False
    if t in (VectorForm, MapForm, SetForm):
        return all(is_literal(x) for x in form)
    return True


def literal_value(form: Any) -> Any:
    """The value of a literal (or quoted) form."""
    t = type(form)
    if t is VectorForm or t is ListForm:
        return [literal_value(x) for x in form]
    if t is MapForm:
        return {freeze(literal_value(form[i])): literal_value(form[i + 1])
                for i in range(0, len(form), 2)}
    if t is SetForm:
        return frozenset(freeze(literal_value(x)) for x in form)
    if t is Symbol:
        raise LispSyntaxError(f"quoted symbols are not supported ('{form.name})",
                              *position(form, (1, 1)))
    return form


def symbols_in(form: Any, out: set[str]) -> set[str]:
    """Every unqualified symbol name used anywhere inside ``form``."""
    t = type(form)
    if t is Symbol:
        if form.ns is None:
            out.add(form.name)
    elif t in (ListForm, VectorForm, MapForm, SetForm) or isinstance(form, (list, tuple)):
        for x in form:
            symbols_in(x, out)
    return out




#: Forms with more parts than this count one step per part (see :func:`weigh`).
WIDE = 8


def weigh(ctx: Any, node: Node, parts: int) -> Node:
    """``node``, counting ``parts`` steps per evaluation when the form is wide.

    A form's own step does not cover the work of its parts when they are
    constants (``(do 1 1 1 ...)``, ``[x 1 1 ...]``, ``(cond false 1 ...)``); for
    forms with more than :data:`WIDE` parts every evaluation counts them, so a
    huge form run in a loop still meets the step limit and the clock.
    """
    if parts <= WIDE:
        return node

    def weighed(env: dict[str, Any]) -> Any:
        ctx.steps += parts
        if ctx.steps > ctx.check_at:
            ctx.check()
        return node(env)

    return weighed
