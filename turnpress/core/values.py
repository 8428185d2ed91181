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
from collections.abc import Callable, Iterable, Mapping
from itertools import filterfalse
from typing import Any

from turnpress.core.model import Failure, Fn, HashableMap, Keyword

__all__ = [
    "CONTAINER_TYPES",
    "DigestBudgetExceeded",
    "Digester",
    "RegexValue",
    "is_container",
    "is_regex",
    "object_id",
    "same_value",
    "value_digester",
    "value_key",
]


#: An object's identity key: its identity hash, which CPython derives from its address
#: (distinct for live objects, like ``id``) for every object, lists and dicts included.
#: Unlike ``id`` it raises no audit event: with an audit hook installed (a sandbox's, a
#: fuzzer's), ``id`` costs a Python call, and the value walks use it per reference.
object_id = object.__hash__
#: The container types the sandbox and the decoder make, checked by ``type`` before the
#: (much slower) ``isinstance`` against ``Mapping``.
CONTAINER_TYPES = frozenset({list, tuple, dict, set, frozenset, HashableMap})
#: Types whose values are never containers (checked by ``type`` before ``isinstance``).
_SCALAR_TYPES = frozenset({str, int, float, bool, type(None), Keyword})
_id = object_id
_END = object()  # an exhausted iterator's default


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
        if _is_hashable_scalar(v) or _id(v) in memo:
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
            memo[_id(v)] = HashableMap({_frozen(k, memo): _frozen(x, memo)
                                        for k, x in v.items()})
        elif isinstance(v, (set, frozenset)):
            memo[_id(v)] = frozenset(_frozen(x, memo) for x in v)
        elif isinstance(v, (list, tuple)):
            memo[_id(v)] = tuple(_frozen(x, memo) for x in v)
        else:
            memo[_id(v)] = v
    return memo[_id(value)]


def _frozen(v: Any, memo: dict[int, Any]) -> Any:
    return v if _is_hashable_scalar(v) else memo[_id(v)]


def _is_hashable_scalar(v: Any) -> bool:
    # a frozenset holds only hashable items already: walking it again would make
    # decoding sets nested n deep cost n^2
    return v is None or isinstance(v, (str, int, float, Keyword)) or (
        isinstance(v, (HashableMap, Fn, Failure, frozenset)) or is_regex(v))


def is_container(v: Any) -> bool:
    """Whether ``v`` holds other values (a list, tuple, map or set)."""
    t = type(v)
    if t in CONTAINER_TYPES:
        return True
    if t in _SCALAR_TYPES:
        return False
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


def _first_bits(digest: bytes) -> float:
    """A float ordered as the first 52 bits of ``digest`` are (exact: under 2^53)."""
    return float(int.from_bytes(digest[:7], "big") >> 4)


class DigestBudgetExceeded(Exception):
    """A :func:`value_digester` function ran out of its item budget."""


class Digester:
    """Digests that equal values share, remembered per object for its lifetime; with a
    ``budget``, :class:`DigestBudgetExceeded` once that many items were visited."""

    def __init__(self, budget: int | None = None) -> None:
        self.digests: dict[int, bytes] = {}  # _id(container) -> digest of its value
        self.budget = budget  # items digest() may still visit (None: no bound)
        self.objects: dict[int, Any] = {}  # _id(container) -> it (alive while its _id is used)
        # _id(set of collections) -> its items' _ids sorted by digest (the codec's order)
        self.set_sorted: dict[int, list[int]] = {}
        # when a list: each container digested, with its items and their _ids (None
        # unless all are collections), appended as it is digested (for the codec)
        self.digested: list[tuple[Any, Any, list[int] | None]] | None = None
        # _id(container) -> a float ordered as the first 52 bits of its digest (a
        # faster sort key than the bytes), or the digest itself once two digests share
        # their first 52 bits (:meth:`_note`)
        self.keys: dict[int, Any] = {}
        self._by_key: dict[float, bytes] | None = {}  # key -> its digest (None: exact)

    def digest(self, value: Any) -> bytes:
        """A digest that equal values share (maps and sets whatever their order),
        computed once per distinct object, without recursion.

        Depth first; each container's items are looked at in bulk (C-level passes
        over their _ids, no Python step per item when they are all collections), and
        an item is entered only if it has no digest yet when its turn comes, so the
        cost is linear in the references, however much structure is shared."""
        if not is_container(value):
            return _scalar_digest(value)
        memo = self.digests
        found = memo.get(_id(value))
        if found is not None:
            return found
        frames = [self._open(value)]
        while frames:
            frame = frames[-1]
            child = next(frame[3], _END)
            if child is _END:
                frames.pop()
                self._close(frame[0], frame[1], frame[2])
                continue
            if frame[2] is not None:  # an _id: its object, at its place (found in C)
                if frame[4] is None:
                    frame[4] = [frame[1] if isinstance(frame[1], list) else list(frame[1]), 0]
                kids, at = frame[4]
                at = frame[4][1] = frame[2].index(child, at)  # the _ids come in order
                child = kids[at]
            frames.append(self._open(child))
        return memo[_id(value)]

    def _open(self, v: Any) -> list[Any]:
        """``v``'s frame: [v, its items, their _ids (None unless all are collections),
        an iterator over the items (or _ids) still to digest, checked as each turn
        comes, and [the items as a list, where the last one entered is] once needed]."""
        memo = self.digests
        kids: Any = [x for kv in v.items() for x in kv] if isinstance(v, Mapping) else v
        if set(map(type, kids)) <= CONTAINER_TYPES:
            ids = list(map(_id, kids))
            return [v, kids, ids, filterfalse(memo.__contains__, ids), None]
        return [v, kids, None, (x for x in kids if is_container(x) and _id(x) not in memo),
                None]

    def _close(self, v: Any, kids: Any, ids: list[int] | None) -> None:
        """Digest ``v`` from its items' digests (all known by now)."""
        memo = self.digests
        if self.budget is not None:
            self.budget -= len(kids)
            if self.budget < 0:
                raise DigestBudgetExceeded
        i = _id(v)
        if ids is not None and isinstance(v, (set, frozenset)):
            # sorted by digest (each item's sort key orders as its digest): the order
            # the codec writes; stable, so equal items keep their iteration order
            order = sorted(ids, key=self.keys.__getitem__)
            raw = b"S" + b"".join(map(memo.__getitem__, order))
            self.set_sorted[i] = order
        elif ids is not None and not isinstance(v, Mapping):
            raw = b"l" + b"".join(map(memo.__getitem__, ids))
        else:
            if ids is not None:
                parts = list(map(memo.__getitem__, ids))
            else:
                parts = [memo[_id(x)] if is_container(x) else _scalar_digest(x)
                         for x in kids]
            if isinstance(v, Mapping):
                raw = b"m" + b"".join(sorted(parts[j] + parts[j + 1]
                                             for j in range(0, len(parts), 2)))
            elif isinstance(v, (set, frozenset)):
                raw = b"S" + b"".join(sorted(parts))
            else:
                raw = b"l" + b"".join(parts)
        digest = memo[i] = hashlib.blake2b(raw, digest_size=16).digest()
        self.objects[i] = v
        self._note(i, digest)
        if self.digested is not None:
            self.digested.append((v, kids, ids))

    def _note(self, i: int, digest: bytes) -> None:
        """Record the sort key of container ``i``."""
        by_key = self._by_key
        if by_key is None:
            self.keys[i] = digest
            return
        key = _first_bits(digest)
        if by_key.setdefault(key, digest) != digest:
            # two digests alike in their first 52 bits: sort by whole digests from now
            # on (every order made so far held no such pair)
            self._by_key = None
            self.keys = dict(self.digests)
            return
        self.keys[i] = key


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
    by_x = dict(zip(map(hash, x), x, strict=True))
    by_y = dict(zip(map(hash, y), y, strict=True))
    if len(by_x) == len(x) and len(by_y) == len(y):  # no two items of one set collide
        if by_x.keys() != by_y.keys():
            return None
        return list(zip(by_x.values(), map(by_y.__getitem__, by_x), strict=True))
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
    digests = Digester()
    stack = [(a, b)]
    seen: set[tuple[int, int]] = {(_id(a), _id(b))}

    def push(xs: Iterable[Any], ys: Iterable[Any]) -> None:
        """Compare these pairs later, each pair of objects once (found in bulk: shared
        parts meet the same pairs again and again)."""
        xs, ys = list(xs), list(ys)
        pairs = dict(zip(zip(map(_id, xs), map(_id, ys), strict=True), zip(xs, ys, strict=True),
                         strict=True))
        new = pairs.keys() - seen
        seen.update(new)
        stack.extend(map(pairs.__getitem__, new))

    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
            if len(x) != len(y):
                return False
            push(x, y)
        elif isinstance(x, Mapping) and isinstance(y, Mapping):
            if len(x) != len(y):
                return False
            found: list[Any] = []
            for k in x:
                try:
                    found.append(y[k])
                except (KeyError, TypeError, RecursionError):  # deep keys: compared by value
                    break
            else:
                push(x.values(), found)
                continue
            # a key not found by hash (NaN, or a regex read back from a trace): pair
            # the keys by value
            keys = _digest_pairs(list(x), list(y), digests)
            if keys is None:
                return False
            push([kx for kx, _ in keys] + [x[kx] for kx, _ in keys],
                 [ky for _, ky in keys] + [y[ky] for _, ky in keys])
        elif isinstance(x, (set, frozenset)) and isinstance(y, (set, frozenset)):
            pairs = _set_pairs(x, y)
            if pairs is None:
                pairs = _digest_pairs(list(x), list(y), digests)
                if pairs is None:
                    return False
            if pairs:
                push(*zip(*pairs, strict=True))
        elif isinstance(x, float) and isinstance(y, float):
            if not (x == y or (math.isnan(x) and math.isnan(y))):
                return False
        elif isinstance(x, bool) or isinstance(y, bool):
            if type(x) is not type(y) or x != y:
                return False
        elif is_container(x) or is_container(y) or x != y:
            return False
    return True
