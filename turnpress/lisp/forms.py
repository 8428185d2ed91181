"""The code forms :func:`~turnpress.lisp.read_program` produces.

Scalars read as themselves (``nil`` -> ``None``, numbers, strings, ``Keyword``).
Symbols and the four bracketed forms get their own types so the evaluator can
tell code apart from data; every bracketed form and symbol remembers the line and
column it started at, for error messages. Forms are immutable (tuples).
"""

from __future__ import annotations

from typing import Any

from turnpress.core.clojure import to_clojure

__all__ = ["ListForm", "MapForm", "SetForm", "Symbol", "VectorForm", "form_text", "position"]


class Symbol:
    """A symbol such as ``x``, ``tool/search`` or ``clojure.string/join``.

    ``name`` is the full text, ``ns`` the part before ``/`` (or ``None``) and
    ``local`` the part after it. Two symbols are equal when their names are.
    """

    __slots__ = ("column", "line", "local", "name", "ns")

    def __init__(self, name: str, line: int = 0, column: int = 0) -> None:
        self.name = name
        ns, sep, local = name.partition("/")
        if sep and ns and local:
            self.ns: str | None = ns
            self.local = local
        else:
            self.ns = None
            self.local = name
        self.line = line
        self.column = column

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Symbol) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("Symbol", self.name))

    def __repr__(self) -> str:
        return f"Symbol({self.name!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Symbol, (self.name, self.line, self.column))


class _Positioned(tuple):
    """A tuple that remembers where its opening bracket was."""

    line: int = 0
    column: int = 0

    def __new__(cls, items: Any = (), line: int = 0, column: int = 0) -> _Positioned:
        self = super().__new__(cls, items)
        self.line = line
        self.column = column
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (tuple(self), self.line, self.column))


class ListForm(_Positioned):
    """``(a b c)``: a call or a special form."""


class VectorForm(_Positioned):
    """``[a b c]``: evaluates to a list of the evaluated items."""


class MapForm(_Positioned):
    """``{k v ...}``: the keys and values alternate (an even number of forms)."""


class SetForm(_Positioned):
    """``#{a b}``: evaluates to a frozenset."""


def position(form: Any, default: tuple[int, int] = (0, 0)) -> tuple[int, int]:
    """``(line, column)`` of a form, or ``default`` for a scalar that has none."""
    line = getattr(form, "line", 0)
    if line:
        return line, form.column
    return default


_BRACKETS = {"ListForm": ("(", ")"), "VectorForm": ("[", "]"), "MapForm": ("{", "}"),
             "SetForm": ("#{", "}")}


def form_text(form: Any) -> str:
    """Source-like text of a form (used to show destructuring parameters)."""
    if isinstance(form, Symbol):
        return form.name
    brackets = _BRACKETS.get(type(form).__name__)
    if brackets is not None:
        return brackets[0] + " ".join(form_text(x) for x in form) + brackets[1]
    return to_clojure(form)[0]
