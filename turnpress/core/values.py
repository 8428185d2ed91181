"""What the value codec and the value printer share: regex values, hashable keys,
digests that equal values share, and comparing two values as a trace sees them.

Below both :mod:`turnpress.core.codec` (values <-> JSON) and
:mod:`turnpress.core.clojure` (values -> Clojure text): the printer orders the items
of a set by digest when their short renderings tie, and the codec writes sets in
the printer's order, so neither may import the other's half of this.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from typing import Any

from turnpress.core.model import Failure, Fn, HashableMap, Keyword

__all__ = [
    "DigestBudgetExceeded",
    "Digester",
    "RegexValue",
    "is_container",
    "is_regex",
    "same_value",
    "value_digester",
    "value_key",
]


class RegexValue:
    """A regex literal (``#"\\s+"``) read from a trace: its pattern ``source``.

    Equal to any regex value with the same source, such as the interpreter's own.
    """

    __slots__ = ("source",)

    def __init__(self, source: str) -> None:
        self.source = source

    def __eq__(self, other: object) -> bool:
        if is_regex(other):
            return self.source == other.source  # type: ignore[attr-defined]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(("regex", self.source))

    def __str__(self) -> str:
        return self.source

    def __repr__(self) -> str:
        return f"RegexValue({self.source!r})"


def is_regex(value: Any) -> bool:
    """Whether ``value`` is a regex value (the interpreter's or :class:`RegexValue`),
    found by duck typing so the core needs no interpreter import."""
    return type(value).__name__ in ("Regex", "RegexValue") and isinstance(
        getattr(value, "source", None), str)


def value_key(value: Any) -> Any:
    """``value`` made hashable (lists -> tuples, maps -> :class:`HashableMap`,
    sets -> frozensets), without recursion and visiting shared parts once."""
    if _is_hashable_scalar(value):
        return value
    memo: dict[int, Any] = {}
    # post-order: ("enter", v) then ("exit", v)
    stack: list[tuple[bool, Any]] = [(False, value)]
    while stack:
        done, v = stack.pop()
        if _is_hashable_scalar(v) or id(v) in memo:
            continue
        if not done:
            stack.append((True, v))
            if isinstance(v, Mapping):
                for k, x in v.items():
                    stack.append((False, k))
                    stack.append((False, x))
            elif isinstance(v, (list, tuple, set, frozenset)):
                stack.extend((False, x) for x in v)
            continue
        if isinstance(v, Mapping):
            memo[id(v)] = HashableMap({_frozen(k, memo): _frozen(x, memo)
                                       for k, x in v.items()})
        elif isinstance(v, (set, frozenset)):
            memo[id(v)] = frozenset(_frozen(x, memo) for x in v)
        elif isinstance(v, (list, tuple)):
            memo[id(v)] = tuple(_frozen(x, memo) for x in v)
        else:
            memo[id(v)] = v
    return memo[id(value)]


def _frozen(v: Any, memo: dict[int, Any]) -> Any:
    return v if _is_hashable_scalar(v) else memo[id(v)]


def _is_hashable_scalar(v: Any) -> bool:
    # a frozenset holds only hashable items already: walking it again would make
    # decoding sets nested n deep cost n^2
    return v is None or isinstance(v, (str, int, float, Keyword)) or (
        isinstance(v, (HashableMap, Fn, Failure, frozenset)) or is_regex(v))


def is_container(v: Any) -> bool:
    """Whether ``v`` holds other values (a list, tuple, map or set)."""
    return isinstance(v, (list, tuple, Mapping, set, frozenset))


def _scalar_digest(v: Any) -> bytes:
    """A digest of a scalar that equal scalars of the same type share."""
    if v is None:
        raw = b"n"
    elif isinstance(v, bool):
        raw = b"b1" if v else b"b0"
    elif isinstance(v, int):
        raw = b"i" + hex(v).encode()
    elif isinstance(v, float):
        raw = b"f" + repr(v).encode()
    elif isinstance(v, str):
        raw = b"s" + v.encode("utf-8", "surrogatepass")
    elif isinstance(v, Keyword):
        raw = b"k" + v.name.encode("utf-8", "surrogatepass")
    elif is_regex(v):
        raw = b"r" + v.source.encode("utf-8", "surrogatepass")
    elif isinstance(v, Fn):
        raw = b"F" + repr((tuple(map(str, v.params)), v.doc, v.return_type)).encode(
            "utf-8", "surrogatepass")
    elif isinstance(v, Failure):
        raw = b"x" + repr((v.reason, v.message)).encode("utf-8", "surrogatepass")
    else:
        raw = b"?" + type(v).__name__.encode() + repr(v).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(raw, digest_size=16).digest()


class DigestBudgetExceeded(Exception):
    """A :func:`value_digester` function ran out of its item budget."""


class Digester:
    """Digests that equal values share, remembered per object for its lifetime; with a
    ``budget``, :class:`DigestBudgetExceeded` once that many items were visited."""

    def __init__(self, budget: int | None = None) -> None:
        self.digests: dict[int, bytes] = {}  # id(container) -> digest of its value
        self.budget = budget  # items digest() may still visit (None: no bound)

    def digest(self, value: Any) -> bytes:
        """A digest that equal values share (maps and sets whatever their order),
        computed once per distinct object, without recursion."""
        if not is_container(value):
            return _scalar_digest(value)
        memo = self.digests
        stack: list[tuple[Any, bool]] = [(value, False)]
        while stack:
            v, done = stack.pop()
            i = id(v)
            if i in memo:
                continue
            if isinstance(v, Mapping):
                kids: Any = [x for kv in v.items() for x in kv]
            else:
                kids = v
            if not done:
                stack.append((v, True))
                stack.extend((x, False) for x in kids
                             if is_container(x) and id(x) not in memo)
                continue
            if self.budget is not None:
                self.budget -= len(kids)
                if self.budget < 0:
                    raise DigestBudgetExceeded
            parts = [memo[id(x)] if is_container(x) else _scalar_digest(x) for x in kids]
            if isinstance(v, Mapping):
                pairs = sorted(parts[j] + parts[j + 1] for j in range(0, len(parts), 2))
                raw = b"m" + b"".join(pairs)
            elif isinstance(v, (set, frozenset)):
                raw = b"S" + b"".join(sorted(parts))
            else:
                raw = b"l" + b"".join(parts)
            memo[i] = hashlib.blake2b(raw, digest_size=16).digest()
        return memo[id(value)]


def value_digester(budget: int | None = None) -> Callable[[Any], bytes]:
    """A function giving a value a digest that equal values share (maps and sets
    whatever their order; the same under every hash seed). It remembers each object's
    digest for as long as the function lives, so shared parts are digested once.
    With a ``budget``, it raises :class:`DigestBudgetExceeded` once it has visited
    that many items in all."""
    return Digester(budget).digest


def _set_pairs(x: Any, y: Any) -> list[tuple[Any, Any]] | None:
    """The items of sets ``x`` and ``y`` paired by hash (equal items hash alike), to be
    compared like the rest; None if they cannot be equal. Python's set ``==`` recurses
    into items, and fails on sets nested 1,000 deep."""
    if len(x) != len(y):
        return None
    xs: dict[int, list[Any]] = {}
    ys: dict[int, list[Any]] = {}
    for items, buckets in ((x, xs), (y, ys)):
        for item in items:
            buckets.setdefault(hash(item), []).append(item)
    if xs.keys() != ys.keys():
        return None
    pairs = []
    for h, found in xs.items():
        other = ys[h]
        if len(found) != len(other):
            return None
        if len(found) == 1:
            pairs.append((found[0], other[0]))
            continue
        try:  # a hash collision: fall back on Python's comparison
            if set(found) != set(other):
                return None
        except RecursionError:
            return None
    return pairs


def _digest_pairs(xs: list[Any], ys: list[Any],
                  digests: Digester) -> list[tuple[Any, Any]] | None:
    """Items of ``xs`` and ``ys`` paired by a digest of their values (equal values,
    whatever their Python hash, pair up); None if they cannot be paired."""
    if len(xs) != len(ys):
        return None
    buckets: dict[bytes, list[Any]] = {}
    for item in xs:
        buckets.setdefault(digests.digest(item), []).append(item)
    pairs = []
    for item in ys:
        found = buckets.get(digests.digest(item))
        if not found:
            return None
        pairs.append((found.pop(), item))
    return pairs


def same_value(a: Any, b: Any) -> bool:
    """Whether two values are the same as far as a trace can tell: lists and tuples
    alike, NaN equal to NaN, shared or not. Compared without recursion (Python's
    ``==`` fails on values nested 1,000 deep) and visiting each pair of shared
    parts once."""
    seen: set[tuple[int, int]] = set()
    digests = Digester()
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        pair = (id(x), id(y))
        if pair in seen:
            continue
        seen.add(pair)
        if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif isinstance(x, Mapping) and isinstance(y, Mapping):
            if len(x) != len(y):
                return False
            found: list[tuple[Any, Any]] = []
            for k, v in x.items():
                try:
                    found.append((v, y[k]))
                except (KeyError, TypeError, RecursionError):  # deep keys: compared by value
                    break
            else:
                stack.extend(found)
                continue
            # a key not found by hash (NaN, or a regex read back from a trace): pair
            # the keys by value
            keys = _digest_pairs(list(x), list(y), digests)
            if keys is None:
                return False
            for kx, ky in keys:
                stack.append((kx, ky))
                stack.append((x[kx], y[ky]))
        elif isinstance(x, (set, frozenset)) and isinstance(y, (set, frozenset)):
            pairs = _set_pairs(x, y)
            if pairs is None:
                pairs = _digest_pairs(list(x), list(y), digests)
                if pairs is None:
                    return False
            stack.extend(pairs)
        elif isinstance(x, float) and isinstance(y, float):
            if not (x == y or (math.isnan(x) and math.isnan(y))):
                return False
        elif isinstance(x, bool) or isinstance(y, bool):
            if type(x) is not type(y) or x != y:
                return False
        elif is_container(x) or is_container(y) or x != y:
            return False
    return True
