"""The table of built-in functions and the decorator that fills it."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from turnpress.lisp.values import CoreFn

__all__ = ["CATEGORIES", "CORE", "NS_ALIASES", "QUALIFIED", "core", "resolve_qualified"]

#: Bare-name built-ins (``map``, ``str``, ``join``...).
CORE: dict[str, CoreFn] = {}
#: Namespace-qualified built-ins (``clojure.string/join``, ``Math/floor``...).
QUALIFIED: dict[str, CoreFn] = {}
#: Namespace spellings that mean the same namespace.
NS_ALIASES = {
    "str": "clojure.string",
    "string": "clojure.string",
    "s": "clojure.string",
    "clojure.math": "Math",
    "math": "Math",
    "Long": "Integer",
}
#: Reference-section titles, in the order the language reference lists them.
CATEGORIES = {
    "numbers": "Numbers",
    "compare": "Comparison and logic",
    "predicates": "Predicates",
    "access": "Maps and lookup",
    "build": "Building collections",
    "seqs": "Sequences",
    "higher": "Functions",
    "strings": "Strings",
    "output": "Output",
}


def core(
    name: str,
    summary: str,
    *,
    category: str,
    aliases: tuple[str, ...] = (),
    qualified: tuple[str, ...] = (),
    bare: bool = True,
    binary: Callable[..., Any] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``impl`` as built-in ``name`` (plus ``aliases`` and ``qualified`` names).

    A first parameter called ``ctx`` receives the run context. The arity comes
    from the signature; parameters with defaults are optional. ``binary`` is an
    optional faster implementation for calls with exactly two arguments.
    """
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r}")

    def register(impl: Callable[..., Any]) -> Callable[..., Any]:
        params = list(inspect.signature(impl).parameters.values())
        needs_ctx = bool(params) and params[0].name == "ctx"
        if needs_ctx:
            params = params[1:]
        positional = [p for p in params if p.kind is p.POSITIONAL_OR_KEYWORD
                      or p.kind is p.POSITIONAL_ONLY]
        variadic = [p for p in params if p.kind is p.VAR_POSITIONAL]
        display = [p.name.rstrip("_").replace("_", "-") for p in positional]
        if variadic:
            display += ["&", variadic[0].name.replace("_", "-")]
        fn = CoreFn(
            params=tuple(display),
            name=name if bare or not qualified else qualified[0],
            impl=impl,
            min_args=sum(1 for p in positional if p.default is p.empty),
            max_args=None if variadic else len(positional),
            needs_ctx=needs_ctx,
            binary=binary,
            binary_needs_ctx=binary is not None and _takes_ctx(binary),
            summary=summary,
            category=category,
        )
        for n in ((name, *aliases) if bare else aliases):
            if n in CORE:
                raise ValueError(f"built-in {n!r} registered twice")
            CORE[n] = fn
        for q in qualified:
            QUALIFIED[q] = fn
        if not impl.__doc__:
            impl.__doc__ = summary
        return impl

    return register


def _takes_ctx(fn: Callable[..., Any]) -> bool:
    params = list(inspect.signature(fn).parameters)
    return bool(params) and params[0] == "ctx"


def resolve_qualified(ns: str, local: str) -> CoreFn | None:
    """The built-in for ``ns/local`` (``clojure.string/join``, ``clojure.core/map``...)."""
    ns = NS_ALIASES.get(ns, ns)
    if ns == "clojure.core":
        return CORE.get(local)
    return QUALIFIED.get(f"{ns}/{local}")
