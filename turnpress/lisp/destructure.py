"""Binding patterns for ``let``, ``loop``, ``fn`` parameters, ``for`` and ``doseq``.

A pattern is a symbol, a vector ``[a b & more :as all]`` or a map
``{:keys [a b] :strs [c] :or {a 1} :as m, x :x}``. :func:`compile_pattern` turns one
into a binder ``(env, value) -> None`` and reports the names it binds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from turnpress.core.model import Keyword
from turnpress.lisp.errors import LispSyntaxError
from turnpress.lisp.forms import MapForm, Symbol, VectorForm, form_text, position
from turnpress.lisp.values import MISSING, lookup, seq

__all__ = ["Binder", "compile_pattern"]

Binder = Callable[[dict[str, Any], Any], None]
#: Compiles an expression form (for ``:or`` defaults) given the names in scope.
ExprCompiler = Callable[[Any, frozenset[str]], Callable[[dict[str, Any]], Any]]


def _error(form: Any, message: str, where: Any) -> LispSyntaxError:
    line, column = position(form, position(where, (1, 1)))
    return LispSyntaxError(message, line, column)


def _local_name(sym: Any, where: Any) -> str:
    if not isinstance(sym, Symbol) or sym.ns is not None or sym.name in ("&", "nil"):
        hint = ("& must come just before the last name, as in [a b & more]"
                if isinstance(sym, Symbol) and sym.name == "&" else "expected a plain name")
        raise _error(sym, f"invalid binding form {form_text(sym)}: {hint}", where)
    return sym.name


def compile_pattern(
    pattern: Any,
    scope: frozenset[str],
    compile_expr: ExprCompiler,
    names: list[str],
    where: Any = None,
) -> Binder:
    """A binder for ``pattern``; the names it binds are appended to ``names``.

    ``where`` is the enclosing form, whose position errors use when the pattern
    itself has none (a number, say).
    """
    where = pattern if getattr(pattern, "line", 0) else where
    if isinstance(pattern, Symbol):
        name = _local_name(pattern, where)
        names.append(name)

        def bind_symbol(env: dict[str, Any], value: Any) -> None:
            env[name] = value

        return bind_symbol
    if isinstance(pattern, VectorForm):
        return _vector_pattern(pattern, scope, compile_expr, names)
    if isinstance(pattern, MapForm):
        return _map_pattern(pattern, scope, compile_expr, names)
    raise _error(pattern, f"invalid binding form {form_text(pattern)}: expected a name, "
                 "a vector [a b] or a map {:keys [a b]}", where)


def _vector_pattern(
    pattern: VectorForm, scope: frozenset[str], compile_expr: ExprCompiler, names: list[str]
) -> Binder:
    items = list(pattern)
    as_binder: Binder | None = None
    rest_binder: Binder | None = None
    if len(items) >= 2 and items[-2] == Keyword("as"):
        as_binder = compile_pattern(items[-1], scope, compile_expr, names, pattern)
        items = items[:-2]
    if len(items) >= 2 and isinstance(items[-2], Symbol) and items[-2].name == "&":
        rest_binder = compile_pattern(items[-1], scope, compile_expr, names, pattern)
        items = items[:-2]
    binders = [compile_pattern(p, scope, compile_expr, names, pattern) for p in items]
    count = len(binders)

    def bind_vector(env: dict[str, Any], value: Any) -> None:
        s = seq(value)
        n = len(s)
        for i, b in enumerate(binders):
            b(env, s[i] if i < n else None)
        if rest_binder is not None:
            rest_binder(env, list(s[count:]) or None)
        if as_binder is not None:
            as_binder(env, value)

    return bind_vector


def _map_pattern(
    pattern: MapForm, scope: frozenset[str], compile_expr: ExprCompiler, names: list[str]
) -> Binder:
    pairs = [(pattern[i], pattern[i + 1]) for i in range(0, len(pattern), 2)]
    defaults: dict[str, Any] = {}
    as_name: str | None = None
    lookups: list[tuple[Any, Any]] = []  # (target pattern or name, key)
    for key, val in pairs:
        if key == Keyword("or"):
            if not isinstance(val, MapForm):
                raise _error(val, ":or in a map pattern needs a map of defaults", pattern)
            for i in range(0, len(val), 2):
                defaults[_local_name(val[i], pattern)] = compile_expr(val[i + 1], scope)
        elif key == Keyword("as"):
            as_name = _local_name(val, pattern)
        elif key in (Keyword("keys"), Keyword("strs")):
            if not isinstance(val, VectorForm):
                raise _error(val, f"{key} in a map pattern needs a vector of names", pattern)
            for sym in val:
                name = _local_name(sym, pattern)
                lookups.append((name, Keyword(name) if key == Keyword("keys") else name))
        elif isinstance(key, (Symbol, VectorForm, MapForm)):
            if isinstance(val, (Symbol, VectorForm, MapForm, tuple)):
                raise _error(val, "a map pattern key must be a constant", pattern)
            lookups.append((key, val))
        else:
            raise _error(pattern, f"invalid map binding entry {form_text(key)}: expected a name, "
                 ":keys, :strs, :or or :as", pattern)
    compiled: list[tuple[Binder, Any, Any]] = []
    for target, key in lookups:
        sub_names: list[str] = []
        if isinstance(target, str):
            target = Symbol(target)
        binder = compile_pattern(target, scope, compile_expr, sub_names, pattern)
        names.extend(sub_names)
        default = defaults.get(sub_names[0]) if isinstance(target, Symbol) else None
        compiled.append((binder, key, default))
    if as_name is not None:
        names.append(as_name)

    def bind_map(env: dict[str, Any], value: Any) -> None:
        for binder, key, default in compiled:
            v = lookup(value, key, MISSING)
            if v is MISSING:
                v = default(env) if default is not None else None
            binder(env, v)
        if as_name is not None:
            env[as_name] = value

    return bind_map
