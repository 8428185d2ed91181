"""Values -> tagged JSON: the writing half of :mod:`turnpress.core.codec`, which
describes the format (tags, ``$graph`` and ``$ref``) and re-exports everything here.

The encoder finds shared objects and nesting cuts in one walk each, looking at each
container's items in bulk, writes sets in the order the printer sorts them (by digest
where their short renderings tie), and writes each shared object once.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from turnpress.core.clojure import set_sort_key
from turnpress.core.model import Failure, Fn, Keyword
from turnpress.core.values import CONTAINER_TYPES, Digester, is_container, is_regex, object_id

__all__ = ["CHUNK_DEPTH", "ValueCodecError", "encode_text", "encode_value"]

#: Most collections nested inside one node of a ``$graph`` (deeper parts become nodes).
CHUNK_DEPTH = 32
#: Integers with more bits than this are written as ``{"$int": "0x..."}``.
_INT_BITS = 13_000
#: Strings at least this long are written once when they occur more than once.
_SHARED_STR_MIN = 128
_SURROGATE = re.compile("[\ud800-\udfff]")
_id = object_id


class ValueCodecError(ValueError):
    """A value that cannot be encoded, or an encoded value that is malformed.

    ``path`` says where inside the value (``[2].name``), ``problem`` what is wrong.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}" if path else problem)
        self.path = path
        self.problem = problem


def _plain_map(m: Mapping[Any, Any]) -> bool:
    """Whether a map is written as a JSON object: string keys, no tag look-alike, and
    no lone surrogate (JSON would join a pair of them into one character on load)."""
    if len(m) == 1:
        (k,) = m
        return (isinstance(k, str) and not k.startswith("$")
                and _SURROGATE.search(k) is None)
    return all(isinstance(k, str) and _SURROGATE.search(k) is None for k in m)


#: Types whose values are never containers nor long strings (never shared nor walked).
_PLAIN_SCALARS = frozenset({int, float, bool, type(None), Keyword})


def _shareable(v: Any) -> bool:
    return is_container(v) or (isinstance(v, str) and len(v) >= _SHARED_STR_MIN)


class _Encoder(Digester):
    def __init__(self, where: str) -> None:
        super().__init__()
        self.where = where
        self.index: dict[int, int] = {}  # _id(node root) -> its $graph index
        self.nodes: list[Any] = []
        self.set_order: dict[int, list[Any]] = {}  # _id(set) -> its items as written (plan)
        # _id(node root) -> its {"$ref": i}: one object per node, shared by its references
        self.refs: dict[int, dict[str, int]] = {}

    def children(self, v: Any) -> Iterable[Any]:
        """The values inside a container that are written in value positions."""
        if isinstance(v, Mapping):
            if _plain_map(v):
                return list(v.values())
            out = []
            for k, x in v.items():
                out.append(k)
                out.append(x)
            return out
        if isinstance(v, (set, frozenset)):
            return self.sorted_set(v)
        return v

    def sorted_set(self, items: Iterable[Any]) -> list[Any]:
        """Set items in their stored order: scalars as shown (nil/booleans, numbers,
        strings, keywords...), then collections; ties broken by a digest of the value,
        so equal sets are written alike whatever their iteration order."""
        def key(x: Any) -> tuple[Any, ...]:
            if is_container(x):
                return (5, "", self.digest(x))
            rank, shown = set_sort_key(x)
            return (rank, shown, self.digest(x))

        done = self.set_sorted.get(_id(items))
        if done is not None:  # a set of collections digested (so sorted) already
            return done
        items = list(items)
        containers = [x for x in items if is_container(x)]
        if containers and len(containers) == len(items):  # a set of collections
            return self.by_digest(containers)
        try:
            if not containers:
                return sorted(items, key=key)
            # scalars by their key, collections by their digest (the same order as
            # sorting everything by key, with each collection's key made once)
            scalars = sorted(((key(x), x) for x in items if not is_container(x)),
                             key=lambda kx: kx[0])
            if any(k[0] == 5 and k[1] == "" for k, _ in scalars):
                return sorted(items, key=key)  # would tie with collections: as it was
            low = [x for k, x in scalars if k[0] < 5]
            return low + self.by_digest(containers) + [x for k, x in scalars if k[0] >= 5]
        except TypeError:  # e.g. a float key next to an unorderable one
            return sorted(items, key=self.digest)

    def by_digest(self, containers: list[Any]) -> list[Any]:
        """Collections sorted by the digest of their value (each digested once)."""
        memo = self.digests
        by_id = dict(zip(map(_id, containers), containers, strict=True))
        for j in by_id.keys() - memo.keys():
            self.digest(by_id[j])
        keys = list(map(memo.__getitem__, map(_id, containers)))
        return [containers[j] for j in sorted(range(len(keys)), key=keys.__getitem__)]

    def plan(self, root: Any) -> tuple[set[int], list[Any]]:
        """Which objects become nodes of their own, and those objects in post-order."""
        # first walk: which objects are referenced more than once (each container's
        # items are looked at once, in bulk: the cost is one set operation per container)
        met: set[int] = {_id(root)}
        shared: set[int] = set()
        children: dict[int, list[Any]] = {}
        stack = [root]
        while stack:
            v = stack.pop()
            i = _id(v)
            if i in children or not is_container(v):
                continue
            kids = list(self.children(v))
            children[i] = kids
            if isinstance(v, (set, frozenset)):
                self.set_order[i] = kids  # sorted once, for body() too
            if set(map(type, kids)) <= CONTAINER_TYPES:
                share = kids
            else:
                share = [k for k in kids if type(k) in CONTAINER_TYPES or (
                    type(k) not in _PLAIN_SCALARS and _shareable(k))]
            by_id = dict(zip(map(_id, share), share, strict=True))
            if len(by_id) < len(share):  # an object held twice by this container
                once: set[int] = set()
                for j in map(_id, share):
                    if j in once:
                        shared.add(j)
                    once.add(j)
            ids = by_id.keys()
            shared |= ids & met
            new = ids - met
            met |= new
            stack.extend(map(by_id.__getitem__, new))
        # second walk: a node starts at the root, at every shared object and every
        # CHUNK_DEPTH collections down; record the node roots in post-order
        roots: set[int] = {_id(root)} | shared
        order: list[Any] = []
        seen: set[int] = set()

        def enter(v: Any, depth: int) -> list[Any] | None:
            """Visit ``v``: its frame [v, depth, items to visit, next position], or None."""
            i = _id(v)
            if not is_container(v):
                if i in shared and i not in seen:
                    seen.add(i)
                    order.append(v)
                return None
            if i in roots and v is not root:
                if i in seen:
                    return None
                depth = 0
            elif depth >= CHUNK_DEPTH:
                roots.add(i)
                depth = 0
            seen.add(i)
            items = children[i]
            if not set(map(type, items)) <= CONTAINER_TYPES:
                items = [k for k in items if type(k) not in _PLAIN_SCALARS]
            return [v, depth, items, 0]

        # depth first, items in order, each object visited once: an item seen by the
        # time its turn comes is skipped (no frame is pushed for it)
        frames = [enter(root, 0)]
        while frames:
            frame = frames[-1]
            items, pos = frame[2], frame[3]
            end = len(items)
            while pos < end and _id(items[pos]) in seen:
                pos += 1
            if pos == end:
                frames.pop()
                if _id(frame[0]) in roots:
                    order.append(frame[0])
                continue
            frame[3] = pos + 1
            child = enter(items[pos], frame[1] + 1)
            if child is not None:
                frames.append(child)
        return roots, order

    def encode(self, root: Any) -> Any:
        if not _shareable(root) or not is_container(root):
            return self.scalar(root, "")
        roots, order = self.plan(root)
        if len(roots) == 1 and len(order) == 1:
            # no sharing, no deep nesting: the plain form
            return self.body(root, roots, 0)
        for v in order:
            self.index[_id(v)] = len(self.nodes)
            self.refs[_id(v)] = {"$ref": len(self.nodes)}
            self.nodes.append(self.body(v, roots, 0) if is_container(v)
                              else self.scalar(v, ""))
        return {"$graph": self.nodes}

    def body(self, v: Any, roots: set[int], depth: int, top: bool = True) -> Any:
        if not top and _id(v) in roots:
            return {"$ref": self.index[_id(v)]}
        if not is_container(v):
            return self.scalar(v, "")
        if depth > CHUNK_DEPTH + 1:  # cannot happen: the plan cut every CHUNK_DEPTH
            raise ValueCodecError(self.where, "internal error: value nesting not cut")
        d = depth + 1
        if isinstance(v, Mapping):
            if _plain_map(v):
                return {k: self.body(x, roots, d, False) for k, x in v.items()}
            return {"$map": [[self.body(k, roots, d, False), self.body(x, roots, d, False)]
                             for k, x in v.items()]}
        if isinstance(v, (set, frozenset)):
            order = self.set_order.get(_id(v))
            return {"$set": self.items(order if order is not None else self.sorted_set(v),
                                       roots, d)}
        return self.items(v, roots, d)

    def items(self, xs: Iterable[Any], roots: set[int], depth: int) -> list[Any]:
        """The encoded items of a list or set (a fast path for refs and small ints)."""
        index = self.index
        if not isinstance(xs, (list, tuple)):
            xs = list(xs)
        ids = list(map(_id, xs))
        if roots.issuperset(ids):  # every item a node of its own (shared): refs only
            return list(map(self.refs.__getitem__, ids))
        out = []
        for x in xs:
            j = _id(x)
            if j in roots:
                out.append({"$ref": index[j]})
            elif type(x) is int and x.bit_length() <= _INT_BITS:
                out.append(x)
            else:
                out.append(self.body(x, roots, depth, False))
        return out

    def scalar(self, value: Any, path: str) -> Any:
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, str):
            if _SURROGATE.search(value) is None:
                return value
            return {"$str": _split_surrogates(value)}
        if isinstance(value, int):
            if value.bit_length() > _INT_BITS:
                return {"$int": hex(value)}
            return int(value)
        if isinstance(value, float):
            if math.isfinite(value):
                return value
            return {"$float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
        if isinstance(value, Keyword):
            return {"$kw": self.scalar(value.name, path)} if _SURROGATE.search(
                value.name) else {"$kw": value.name}
        if isinstance(value, Failure):
            return {"$fail": {"reason": encode_text(value.reason),
                              "message": encode_text(value.message)}}
        if isinstance(value, Fn):
            return {"$fn": {"params": [str(p) for p in value.params], "doc": value.doc,
                            "return_type": value.return_type}}
        if is_regex(value):
            return {"$regex": value.source}
        raise ValueCodecError(self.where, f"a {type(value).__name__} value cannot be stored "
                              "in a trace (supported: nil, booleans, numbers, strings, "
                              "keywords, lists, maps, sets, functions, regexes)")


def _split_surrogates(s: str) -> list[Any]:
    out: list[Any] = []
    pos = 0
    for m in _SURROGATE.finditer(s):
        if m.start() > pos:
            out.append(s[pos:m.start()])
        out.append(ord(m.group()))
        pos = m.end()
    if pos < len(s):
        out.append(s[pos:])
    return out


def encode_text(text: str) -> Any:
    """``text`` as JSON: itself, or ``{"$str": [...]}`` when it holds a lone surrogate.

    JSON can escape a lone surrogate, but reads a high one followed by a low one as a
    single character: written plainly, ``"\\ud800\\udc00"`` would come back changed."""
    if _SURROGATE.search(text) is None:
        return text
    return {"$str": _split_surrogates(text)}


def encode_value(value: Any, where: str = "") -> Any:
    """A JSON-ready form of ``value``, tagged where JSON lacks a type (see module doc).

    Never recurses deeper than :data:`CHUNK_DEPTH` and writes each shared object
    once. Raises :class:`ValueCodecError` for a type no trace can hold.
    """
    return _Encoder(where).encode(value)

