"""Values -> tagged JSON: the writing half of :mod:`turnpress.core.codec`, which
describes the format (tags, ``$graph`` and ``$ref``) and re-exports everything here.

The encoder finds shared objects and nesting cuts in one walk each, looking at each
container's items in bulk, writes sets in the order the printer sorts them (by digest
where their short renderings tie), and writes each shared object once.

Its cost is linear in the value's references with no Python step per reference when
a container holds only collections (issue 23: 1,500 nested sets, 1.1 million
references): the walks work on lists of item ``_id``s with C-level passes (``map``,
``filterfalse``, ``Counter``, ``sorted`` by a float key), the digest walk's findings
are reused by the plan, and :func:`encoded_json` writes a list of refs as text in
one ``str.join``.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from itertools import filterfalse
from typing import Any

from turnpress.core.clojure import set_sort_key
from turnpress.core.errors import a_or_an
from turnpress.core.model import Failure, Fn, Keyword
from turnpress.core.values import CONTAINER_TYPES, Digester, is_container, is_regex, object_id

__all__ = ["CHUNK_DEPTH", "RefList", "ValueCodecError", "encode_text", "encode_value",
           "encoded_json"]

#: Most collections nested inside one node of a ``$graph`` (deeper parts become nodes).
CHUNK_DEPTH = 32
#: Integers with more bits than this are written as ``{"$int": "0x..."}``.
_INT_BITS = 13_000
#: Strings at least this long are written once when they occur more than once.
_SHARED_STR_MIN = 128
_SURROGATE = re.compile("[\ud800-\udfff]")
_id = object_id
_END = object()  # an exhausted iterator's default


class ValueCodecError(ValueError):
    """A value that cannot be encoded, or an encoded value that is malformed.

    ``path`` says where inside the value (``[2].name``), ``problem`` what is wrong.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}" if path else problem)
        self.path = path
        self.problem = problem


class RefList(list):  # type: ignore[type-arg]
    """A list of ``{"$ref": i}`` as the encoder writes a collection whose items are all
    nodes of their own; ``indices`` holds the ``i``, so :func:`encoded_json` writes it in
    one pass instead of one dict at a time. Otherwise a plain list."""

    __slots__ = ("indices",)

    def __init__(self, refs: Iterable[dict[str, int]], indices: list[int]) -> None:
        super().__init__(refs)
        self.indices = indices


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
        # _id(set) -> its items as written, for a set not sorted by digest() (plan)
        self.set_order: dict[int, list[Any]] = {}
        # _id(list or set) -> the _ids of its items as written, when all are collections
        self.kid_ids: dict[int, list[int]] = {}
        # node i's {"$ref": i}: one object per node, shared by its references
        self.ref_list: list[dict[str, int]] = []

    def children(self, v: Any) -> list[Any] | Any:
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
            return list(map(self.objects.__getitem__, done))
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
        ids = list(map(_id, containers))
        for j in filterfalse(memo.__contains__, ids):
            if j not in memo:  # (a collection held twice is digested the first time)
                self.digest(containers[ids.index(j)])
        keys = list(map(memo.__getitem__, ids))
        return [containers[j] for j in sorted(range(len(keys)), key=keys.__getitem__)]

    def plan(self, root: Any) -> tuple[set[int], list[int]]:
        """Which objects become nodes of their own, and those objects' _ids in
        post-order (the objects are in ``self.objects``).

        Two walks over _ids, each looking at a container's items in bulk (C-level
        passes, no Python step per item when they are all collections), so the cost
        is linear in the references however much is shared."""
        objects = self.objects
        rid = _id(root)
        objects[rid] = root
        # first walk: how often each object is referenced (more than once: shared), and
        # the _ids of each container's items that the second walk goes through
        counts: Counter[int] = Counter({rid: 1})
        walk: dict[int, list[int]] = {}  # _id(container) -> _ids of its items to walk
        met: set[int] = {rid}
        stack = [root]
        digested = self.digested = []

        def add(v: Any, found: tuple[Any, list[int] | None] | None = None) -> list[int]:
            """Note container ``v`` (``found``: its items and their _ids from digest());
            return the _ids of its items that may be shared or walked."""
            i = _id(v)
            if isinstance(v, (set, frozenset)):
                if i not in self.set_sorted and v and set(map(type, v)) <= CONTAINER_TYPES:
                    self.digest(v)  # sorts it, and digests (so notes) all it holds
                ids = self.set_sorted.get(i)
            elif found is not None and found[1] is not None and not isinstance(v, Mapping):
                ids = found[1]  # a list or tuple of collections, seen by digest()
            else:
                ids = None
            if ids is None:
                kids = self.children(v)
                if isinstance(v, (set, frozenset)):
                    self.set_order[i] = kids  # sorted once, for body() too
                if set(map(type, kids)) <= CONTAINER_TYPES:
                    ids = list(map(_id, kids))
                    share = kids
                else:
                    share = [k for k in kids if type(k) in CONTAINER_TYPES or (
                        type(k) not in _PLAIN_SCALARS and _shareable(k))]
                    walk[i] = share_ids = list(map(_id, share))
                    objects.update(zip(share_ids, share, strict=True))
                    counts.update(share_ids)
                    return share_ids
                objects.update(zip(ids, share, strict=True))
            self.kid_ids[i] = walk[i] = ids
            counts.update(ids)
            return ids

        while stack:
            v = stack.pop()
            if _id(v) in walk:
                continue
            ids = add(v)
            # containers digested meanwhile (to sort a set): their parts were digested
            # too, so are all here; noted without looking for their items again
            while digested:
                d, kids, d_ids = digested.pop()
                if _id(d) not in walk:
                    met.add(_id(d))
                    add(d, (kids, d_ids))
            for j in filterfalse(met.__contains__, ids):
                if j not in met:  # (not if this container holds it twice)
                    met.add(j)
                    x = objects[j]
                    if is_container(x):
                        stack.append(x)
        self.digested = None
        shared = {j for j, n in counts.items() if n > 1}
        # second walk: a node starts at the root, at every shared object and every
        # CHUNK_DEPTH collections down; record the node roots in post-order
        roots: set[int] = {rid} | shared
        order: list[int] = []
        seen: set[int] = set()

        def enter(i: int, depth: int) -> list[Any] | None:
            """Visit object ``i``: its frame [i, depth, the items still to visit], or
            None."""
            items = walk.get(i)
            if items is None:  # not a collection: a string long enough to share
                if i in shared and i not in seen:
                    seen.add(i)
                    order.append(i)
                return None
            if i in roots and i != rid:
                if i in seen:
                    return None
                depth = 0
            elif depth >= CHUNK_DEPTH:
                roots.add(i)
                depth = 0
            seen.add(i)
            # an item seen by the time its turn comes is skipped (checked lazily)
            return [i, depth, filterfalse(seen.__contains__, items)]

        # depth first, items in order, each object visited once
        frames = [enter(rid, 0)]
        while frames:
            frame = frames[-1]
            child = next(frame[2], _END)
            if child is _END:
                frames.pop()
                if frame[0] in roots:
                    order.append(frame[0])
                continue
            entered = enter(child, frame[1] + 1)
            if entered is not None:
                frames.append(entered)
        return roots, order

    def encode(self, root: Any) -> Any:
        if not _shareable(root) or not is_container(root):
            return self.scalar(root, "")
        roots, order = self.plan(root)
        if len(roots) == 1 and len(order) == 1:
            # no sharing, no deep nesting: the plain form
            return self.body(root, roots, 0)
        for i in order:
            v = self.objects[i]
            self.index[i] = len(self.nodes)
            self.ref_list.append({"$ref": len(self.nodes)})
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
        ids = self.kid_ids.get(_id(v))
        if isinstance(v, (set, frozenset)):
            order = None if ids is not None else self.set_order.get(_id(v))
            if ids is None and order is None:
                order = self.sorted_set(v)
            return {"$set": self.items(order, roots, d, ids)}
        return self.items(v, roots, d, ids)

    def items(self, xs: Iterable[Any] | None, roots: set[int], depth: int,
              ids: list[int] | None = None) -> list[Any]:
        """The encoded items of a list or set (a fast path for refs and small ints);
        ``ids``: their _ids when the plan found them (then ``xs`` may be None)."""
        index = self.index
        if ids is None:
            xs = xs if isinstance(xs, (list, tuple)) else list(xs or ())
            ids = list(map(_id, xs))
        # every item a node of its own (shared): refs only (post-order: all numbered)
        try:
            indices = list(map(index.__getitem__, ids))
        except KeyError:  # an item written here, in this node
            pass
        else:
            return RefList(map(self.ref_list.__getitem__, indices), indices)
        if xs is None:
            xs = list(map(self.objects.__getitem__, ids))
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
        raise ValueCodecError(self.where, f"{a_or_an(type(value).__name__)} value cannot be stored "
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


#: ``json.dumps(x, ensure_ascii=False, allow_nan=False)`` for encoded values (never
#: circular: the encoder writes trees of nodes, so the check is left out).
_to_json = json.JSONEncoder(ensure_ascii=False, allow_nan=False, check_circular=False).encode


def _refs_json(indices: list[int], refs: list[str]) -> str:
    """The JSON text of ``[{"$ref": i}, ...]`` for these ``i``, in one pass
    (``refs[i]`` is the text of ``{"$ref": i}``)."""
    return "[" + ", ".join(map(refs.__getitem__, indices)) + "]"


def _node_json(node: Any, refs: list[str]) -> str:
    if type(node) is RefList:
        return _refs_json(node.indices, refs)
    if type(node) is dict and len(node) == 1 and type(node.get("$set")) is RefList:
        return '{"$set": ' + _refs_json(node["$set"].indices, refs) + "}"
    return _to_json(node)


def encoded_json(encoded: Any) -> str:
    """The text ``json.dumps(encoded, ensure_ascii=False, allow_nan=False)`` gives for
    a value :func:`encode_value` made, written faster: each node of a ``$graph`` that
    only holds refs (:class:`RefList`) in one pass."""
    if type(encoded) is dict and len(encoded) == 1 and type(encoded.get("$graph")) is list:
        nodes = encoded["$graph"]
        refs = [f'{{"$ref": {i}}}' for i in range(len(nodes))]  # refs point back only
        return '{"$graph": [' + ", ".join([_node_json(n, refs) for n in nodes]) + "]}"
    return _to_json(encoded)


def encode_value(value: Any, where: str = "") -> Any:
    """A JSON-ready form of ``value``, tagged where JSON lacks a type (see module doc).

    Never recurses deeper than :data:`CHUNK_DEPTH` and writes each shared object
    once. Raises :class:`ValueCodecError` for a type no trace can hold.
    """
    return _Encoder(where).encode(value)

