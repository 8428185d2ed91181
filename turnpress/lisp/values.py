"""Runtime values of PTC-Lisp and the operations every part of the interpreter shares.

Vectors and lists are Python ``list`` (tuples from input data are read the same
way), maps are ``dict`` (any ``Mapping`` is read), sets are ``frozenset`` (``set``
is read too), keywords are :class:`~turnpress.core.model.Keyword`, ``nil`` is
``None``. Values are never changed in place: every function returns a new value.

Functions are :class:`~turnpress.core.model.Fn` subclasses: :class:`Closure`
(user code), :class:`CoreFn` (built-ins) and :class:`ToolFn` (a tool used as a
value). Walks over nested values take a ``ctx`` whose ``charge(n)`` counts the
work against the step limit, so no value (however shared) can stall a run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from turnpress.core.errors import a_or_an
from turnpress.core.model import Fn, HashableMap, Keyword
from turnpress.lisp.errors import ArgumentError, LispError

__all__ = [
    "MAX_INT_BITS",
    "MISSING",
    "Closure",
    "CoreFn",
    "FrozenDict",
    "Recur",
    "ToolFn",
    "compare",
    "freeze",
    "is_map",
    "is_seq",
    "is_set",
    "kind_name",
    "lisp_eq",
    "lookup",
    "seq",
    "truthy",
]


#: Integers may not grow past this many bits (``size_limit``); far below the
#: 4,300 digits CPython refuses to print, so every integer can be shown.
MAX_INT_BITS = 4096


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


#: Sentinel for "no such key" (``None`` is a real value: nil).
MISSING: Any = _Missing()


@dataclass(frozen=True, eq=False)
class Closure(Fn):
    """A user function made by ``fn``, ``defn`` or ``#(...)``.

    Besides :class:`Fn`'s ``params``/``doc``/``return_type`` it carries its
    parameter form, body forms, the local values it closed over and its name.
    Closures compare by identity.
    """

    param_form: Any = field(default=None, repr=False)
    body: tuple[Any, ...] = field(default=(), repr=False)
    env: Mapping[str, Any] = field(default_factory=dict, repr=False)
    name: str | None = None
    self_name: str | None = field(default=None, repr=False)

    __eq__ = object.__eq__
    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class CoreFn(Fn):
    """A built-in function: ``impl`` does the work, ``summary`` documents it.

    ``impl`` takes the run context first when ``needs_ctx``; ``min_args`` and
    ``max_args`` (``None``: any number) bound its arity. ``binary``, if set, is a
    faster equivalent for exactly two arguments (taking the context first when
    ``binary_needs_ctx``).
    """

    name: str = ""
    impl: Callable[..., Any] | None = field(default=None, repr=False)
    min_args: int = 0
    max_args: int | None = None
    needs_ctx: bool = False
    binary: Callable[..., Any] | None = field(default=None, repr=False)
    binary_needs_ctx: bool = False
    summary: str = field(default="", repr=False)
    category: str = field(default="", repr=False)

    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def accepts(self, n: int) -> bool:
        """Whether ``n`` arguments fit this function's arity."""
        return self.min_args <= n and (self.max_args is None or n <= self.max_args)


@dataclass(frozen=True, eq=False)
class ToolFn(Fn):
    """A tool used as a value (``(map search queries)``); calling it calls the tool."""

    name: str = ""

    __eq__ = object.__eq__
    __hash__ = object.__hash__


class Recur:
    """What ``(recur ...)`` evaluates to: the loop or function rebinds and goes again."""

    __slots__ = ("args",)

    def __init__(self, args: list[Any]) -> None:
        self.args = args


FrozenDict = HashableMap
"""A hashable map: how a map is stored when it is a map key or set element (the
same class a trace loads such a map back as)."""


_SCALARS = (str, int, float, bool, type(None), Keyword)


def truthy(value: Any) -> bool:
    """Clojure truthiness: only ``nil`` and ``false`` are false."""
    return value is not None and value is not False


def is_seq(value: Any) -> bool:
    """A vector/list (Python list or tuple)."""
    return type(value) is list or isinstance(value, (list, tuple))


def is_map(value: Any) -> bool:
    """A map (any Mapping)."""
    return type(value) is dict or isinstance(value, Mapping)


def is_set(value: Any) -> bool:
    """A set (set or frozenset)."""
    return isinstance(value, (set, frozenset))


_KIND_NAMES = {
    type(None): "nil", bool: "boolean", int: "integer", float: "float", str: "string",
    Keyword: "keyword", list: "list", tuple: "list", dict: "map", frozenset: "set",
    set: "set", FrozenDict: "map",
}


def kind_name(value: Any) -> str:
    """A short type name for messages: ``nil``, ``integer``, ``list``, ``function``..."""
    name = _KIND_NAMES.get(type(value))
    if name is not None:
        return name
    if isinstance(value, Fn):
        return "function"
    if isinstance(value, Mapping):
        return "map"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, (set, frozenset)):
        return "set"
    if type(value).__name__ == "Regex":
        return "regex"
    return type(value).__name__


def seq(value: Any) -> list[Any] | tuple[Any, ...]:
    """The items of a collection in order: a map gives ``[k v]`` entries, a string chars."""
    t = type(value)
    if t is list or t is tuple:
        return value
    if value is None:
        return ()
    if t is dict or isinstance(value, Mapping):
        return [[k, v] for k, v in value.items()]
    if isinstance(value, (list, tuple)):
        return value
    if isinstance(value, (set, frozenset)):
        return list(value)
    if t is str:
        return list(value)
    raise ArgumentError("type_error", f"cannot treat {kind_name(value)} as a sequence")


class _KeyBudget:
    """Counts the work of a ``freeze`` that has no run context to charge."""

    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left

    def charge(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise LispError("size_limit", "value too large to be used as a map key or set "
                                          "element")


#: Most nodes a key may have when no run context counts the work.
MAX_KEY_NODES = 100_000


def freeze(value: Any, ctx: Any = None) -> Any:
    """``value`` made hashable (lists -> tuples, maps -> FrozenDict), to be a key.

    The walk is charged to ``ctx``; without one it may visit at most
    :data:`MAX_KEY_NODES` nodes.
    """
    t = type(value)
    if t in _HASHABLE_SCALARS:
        return value
    if ctx is None:
        ctx = _KeyBudget(MAX_KEY_NODES)
    if t is list or t is tuple or isinstance(value, (list, tuple)):
        ctx.charge(len(value) + 1)
        return tuple([freeze(x, ctx) for x in value])
    if isinstance(value, Mapping):
        ctx.charge(2 * len(value) + 1)
        return FrozenDict({freeze(k, ctx): freeze(v, ctx) for k, v in value.items()})
    ctx.charge(1)
    if isinstance(value, (set, frozenset)):
        return frozenset(value)
    try:
        hash(value)
    except TypeError:
        raise ArgumentError("type_error", f"{a_or_an(kind_name(value))} cannot be a map key or "
                                          "set element") from None
    return value


_HASHABLE_SCALARS = frozenset({str, int, float, bool, type(None), Keyword, frozenset})


def lookup(coll: Any, key: Any, default: Any = None) -> Any:
    """Clojure ``get``: a keyword falls back to the string key of the same name.

    Maps look the key up; vectors and strings take an integer index (no
    negative indexing); sets return the key if present; anything else gives
    ``default``.
    """
    t = type(coll)
    if t is dict or isinstance(coll, Mapping):
        try:
            v = coll.get(key, MISSING)
        except TypeError:
            v = coll.get(freeze(key), MISSING)
        if v is MISSING:
            if type(key) is Keyword:
                v = coll.get(key.name, MISSING)
                if v is not MISSING:
                    return v
            return default
        return v
    if coll is None:
        return default
    if t is list or t is tuple or t is str or isinstance(coll, (list, tuple)):
        if type(key) is int and 0 <= key < len(coll):
            return coll[key]
        return default
    if isinstance(coll, (set, frozenset)):
        try:
            return key if key in coll else default
        except TypeError:
            return key if freeze(key) in coll else default
    return default


def map_key(coll: Mapping[Any, Any], key: Any) -> Any:
    """The key under which ``key`` is stored in ``coll`` (keyword -> string fallback)."""
    if type(key) is Keyword and key not in coll and key.name in coll:
        return key.name
    return key


def _is_number(x: Any) -> bool:
    t = type(x)
    return t is int or t is float or (isinstance(x, (int, float)) and t is not bool)


def lisp_eq(a: Any, b: Any, ctx: Any = None) -> bool:
    """Clojure ``=``: value equality; ``1`` and ``1.0`` differ, ``true`` is not ``1``.

    Vectors equal vectors (list or tuple alike), maps compare key by key, sets
    as sets. Functions compare by identity.
    """
    if a is b:
        return True
    ta, tb = type(a), type(b)
    if ta is tb and ta in _EQ_SCALARS:
        return a == b
    if ta in _EQ_SCALARS and tb in _EQ_SCALARS:
        return False
    if isinstance(a, (list, tuple)):
        if not isinstance(b, (list, tuple)) or len(a) != len(b):
            return False
        if ctx is not None:
            ctx.charge(1 + len(a))
        return all(lisp_eq(x, y, ctx) for x, y in zip(a, b, strict=False))
    if isinstance(a, Mapping):
        if not isinstance(b, Mapping) or len(a) != len(b):
            return False
        if ctx is not None:
            ctx.charge(1 + len(a))
        for k, v in a.items():
            other = b.get(k, MISSING)
            if other is MISSING or not lisp_eq(v, other, ctx):
                return False
        return True
    if isinstance(a, (set, frozenset)):
        if ctx is not None:
            ctx.charge(1 + len(a))
        return isinstance(b, (set, frozenset)) and a == b
    if isinstance(a, Fn) or isinstance(b, Fn):
        return False
    if _is_number(a) and _is_number(b):
        return type(a) is type(b) and a == b
    try:
        return bool(a == b)
    except Exception:
        return False


_EQ_SCALARS = frozenset({str, int, float, bool, type(None), Keyword})


def _rank(x: Any) -> int:
    if x is None:
        return 0
    t = type(x)
    if t is bool:
        return 1
    if t is int or t is float:
        return 2
    if t is str:
        return 3
    if t is Keyword:
        return 4
    if isinstance(x, (list, tuple)):
        return 5
    if isinstance(x, (int, float)):
        return 2
    return 9


def compare(a: Any, b: Any, ctx: Any = None) -> int:
    """Clojure ``compare``: -1, 0 or 1. ``nil`` sorts first; vectors by length, then items.

    Numbers compare with numbers, strings with strings, keywords with keywords,
    booleans with booleans; anything else is a ``type_error``.
    """
    ra, rb = _rank(a), _rank(b)
    if ra == 0 or rb == 0:
        return (ra > 0) - (rb > 0)
    if ra != rb or ra == 9:
        raise ArgumentError("type_error", f"cannot compare {kind_name(a)} with {kind_name(b)}")
    if ra == 4:
        a, b = a.name, b.name
    elif ra == 5:
        if ctx is not None:
            ctx.charge(1 + min(len(a), len(b)))
        if len(a) != len(b):
            return -1 if len(a) < len(b) else 1
        for x, y in zip(a, b, strict=False):
            c = compare(x, y, ctx)
            if c:
                return c
        return 0
    elif ra == 2 and (math.isnan(a) or math.isnan(b)):
        return 0
    return -1 if a < b else (1 if a > b else 0)


def iter_items(value: Any) -> Iterator[Any]:
    """Iterate a collection's items (same rules as :func:`seq`) without copying lists."""
    return iter(seq(value))
