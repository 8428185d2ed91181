"""Values <-> JSON for trace files, lossless for every value the sandbox can make.

JSON lacks keywords, sets, functions, non-string map keys, NaN/infinity, integers
past Python's 4,300-digit text limit, strings with lone surrogates and regexes, so
those are tagged: ``{"$kw": "a"}``, ``{"$set": [...]}``, ``{"$fn": {...}}``,
``{"$map": [[k, v], ...]}``, ``{"$fail": {...}}``, ``{"$float": "nan"}``,
``{"$int": "0x..."}``, ``{"$str": ["text", 55296, ...]}``, ``{"$regex": "\\s+"}``.

A value that shares structure (a vector holding ``x`` twice, 40 levels deep, is 41
objects but 2^40 nodes when expanded) or that is nested deeper than
:data:`CHUNK_DEPTH` is written as a graph: ``{"$graph": [node0, node1, ...]}``, the
last node being the value; inside a node ``{"$ref": i}`` stands for node ``i < its
own index``. Each distinct shared object is written once, and no node is nested
deeper than :data:`CHUNK_DEPTH` collections, so neither writing nor reading ever
recurses deeper than that, however deep the value is.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from turnpress.core.model import Failure, Fn, HashableMap, Keyword

__all__ = [
    "CHUNK_DEPTH",
    "MAX_INT_HEX_DIGITS",
    "DigestBudgetExceeded",
    "HashableMap",
    "RegexValue",
    "ValueCodecError",
    "decode_text",
    "decode_value",
    "encode_text",
    "encode_value",
    "is_regex",
    "same_value",
    "value_digester",
    "value_key",
]

#: Most collections nested inside one node of a ``$graph`` (deeper parts become nodes).
CHUNK_DEPTH = 32
#: Most hex digits of a ``{"$int": ...}`` (about 4 million bits).
MAX_INT_HEX_DIGITS = 1_000_000
#: Integers with more bits than this are written as ``{"$int": "0x..."}``.
_INT_BITS = 13_000
#: Strings at least this long are written once when they occur more than once.
_SHARED_STR_MIN = 128
TAGS = ("$kw", "$set", "$fn", "$map", "$fail", "$float", "$int", "$str", "$regex",
        "$graph", "$ref")
_SURROGATE = re.compile("[\ud800-\udfff]")
_HEX = re.compile(r"-?0x[0-9a-f]+\Z")


class ValueCodecError(ValueError):
    """A value that cannot be encoded, or an encoded value that is malformed.

    ``path`` says where inside the value (``[2].name``), ``problem`` what is wrong.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}" if path else problem)
        self.path = path
        self.problem = problem


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


# -- encoding ----------------------------------------------------------------------------


#: An object's identity key: its identity hash, which CPython derives from its address
#: (distinct for live objects, like ``id``) for every object, lists and dicts included.
#: Unlike ``id`` it raises no audit event: with an audit hook installed (a sandbox's, a
#: fuzzer's), ``id`` costs a Python call, and these walks use it per reference.
_id = object.__hash__
#: The container types the sandbox and the decoder make, checked by ``type`` before the
#: (much slower) ``isinstance`` against ``Mapping``.
_CONTAINER_TYPES = frozenset({list, tuple, dict, set, frozenset, HashableMap})


def _is_container(v: Any) -> bool:
    t = type(v)
    if t in _CONTAINER_TYPES:
        return True
    if t is str or t in _PLAIN_SCALARS:
        return False
    return isinstance(v, (list, tuple, Mapping, set, frozenset))


def _plain_map(m: Mapping[Any, Any]) -> bool:
    """Whether a map is written as a JSON object: string keys, no tag look-alike, and
    no lone surrogate (JSON would join a pair of them into one character on load)."""
    if len(m) == 1:
        (k,) = m
        return (isinstance(k, str) and not k.startswith("$")
                and _SURROGATE.search(k) is None)
    return all(isinstance(k, str) and _SURROGATE.search(k) is None for k in m)


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


#: Types whose values are never containers nor long strings (never shared nor walked).
_PLAIN_SCALARS = frozenset({int, float, bool, type(None), Keyword})


def _shareable(v: Any) -> bool:
    return _is_container(v) or (isinstance(v, str) and len(v) >= _SHARED_STR_MIN)


class _Encoder:
    def __init__(self, where: str) -> None:
        self.where = where
        self.index: dict[int, int] = {}  # _id(node root) -> its $graph index
        self.nodes: list[Any] = []
        self.digests: dict[int, bytes] = {}  # _id(container) -> digest of its value
        self.budget: int | None = None  # items digest() may still visit (None: no bound)
        self.set_order: dict[int, list[Any]] = {}  # _id(set) -> its items as written (plan)
        self.set_sorted: dict[int, list[Any]] = {}  # _id(set of collections) -> by digest
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
        from turnpress.core.clojure import set_sort_key

        def key(x: Any) -> tuple[Any, ...]:
            if _is_container(x):
                return (5, "", self.digest(x))
            rank, shown = set_sort_key(x)
            return (rank, shown, self.digest(x))

        done = self.set_sorted.get(_id(items))
        if done is not None:  # a set of collections digested (so sorted) already
            return done
        items = list(items)
        containers = [x for x in items if type(x) in _CONTAINER_TYPES or _is_container(x)]
        if containers and len(containers) == len(items):  # a set of collections
            return self.by_digest(containers)
        try:
            if not containers:
                return sorted(items, key=key)
            # scalars by their key, collections by their digest (the same order as
            # sorting everything by key, with each collection's key made once)
            scalars = sorted(((key(x), x) for x in items if not (
                type(x) in _CONTAINER_TYPES or _is_container(x))), key=lambda kx: kx[0])
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

    def digest(self, value: Any) -> bytes:
        """A digest that equal values share (maps and sets whatever their order),
        computed once per distinct object, without recursion."""
        if not _is_container(value):
            return _scalar_digest(value)
        memo = self.digests
        stack: list[tuple[Any, bool]] = [(value, False)]
        while stack:
            v, done = stack.pop()
            i = _id(v)
            if i in memo:
                continue
            if isinstance(v, Mapping):
                kids: Any = [x for kv in v.items() for x in kv]
            elif isinstance(v, (set, frozenset)):
                kids = list(v)
            else:
                kids = v
            only_containers = set(map(type, kids)) <= _CONTAINER_TYPES
            if not done:
                stack.append((v, True))
                if only_containers:  # the new ones, found in bulk
                    by_id = dict(zip(map(_id, kids), kids, strict=True))
                    stack.extend([(by_id[j], False) for j in by_id.keys() - memo.keys()])
                else:
                    stack.extend([(x, False) for x in kids if (
                        type(x) in _CONTAINER_TYPES or _is_container(x)) and _id(x) not in memo])
                continue
            if self.budget is not None:
                self.budget -= len(kids)
                if self.budget < 0:
                    raise DigestBudgetExceeded
            if only_containers:
                parts = list(map(memo.__getitem__, map(_id, kids)))
            else:
                parts = [memo[_id(x)] if type(x) in _CONTAINER_TYPES or _is_container(x)
                         else _scalar_digest(x) for x in kids]
            if isinstance(v, Mapping):
                pairs = sorted(parts[j] + parts[j + 1] for j in range(0, len(parts), 2))
                raw = b"m" + b"".join(pairs)
            elif isinstance(v, (set, frozenset)):
                order = sorted(range(len(parts)), key=parts.__getitem__)
                raw = b"S" + b"".join(map(parts.__getitem__, order))
                if only_containers:  # sorted by digest: the order sorted_set() writes
                    self.set_sorted[i] = list(map(kids.__getitem__, order))
            else:
                raw = b"l" + b"".join(parts)
            memo[i] = hashlib.blake2b(raw, digest_size=16).digest()
        return memo[_id(value)]

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
            if i in children or not _is_container(v):
                continue
            kids = list(self.children(v))
            children[i] = kids
            if isinstance(v, (set, frozenset)):
                self.set_order[i] = kids  # sorted once, for body() too
            if set(map(type, kids)) <= _CONTAINER_TYPES:
                share = kids
            else:
                share = [k for k in kids if type(k) in _CONTAINER_TYPES or (
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
            if not _is_container(v):
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
            if not set(map(type, items)) <= _CONTAINER_TYPES:
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
        if not _shareable(root) or not _is_container(root):
            return self.scalar(root, "")
        roots, order = self.plan(root)
        if len(roots) == 1 and len(order) == 1:
            # no sharing, no deep nesting: the plain form
            return self.body(root, roots, 0)
        for v in order:
            self.index[_id(v)] = len(self.nodes)
            self.refs[_id(v)] = {"$ref": len(self.nodes)}
            self.nodes.append(self.body(v, roots, 0) if _is_container(v)
                              else self.scalar(v, ""))
        return {"$graph": self.nodes}

    def body(self, v: Any, roots: set[int], depth: int, top: bool = True) -> Any:
        if not top and _id(v) in roots:
            return {"$ref": self.index[_id(v)]}
        if not _is_container(v):
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


class DigestBudgetExceeded(Exception):
    """A :func:`value_digester` function ran out of its item budget."""


def value_digester(budget: int | None = None) -> Callable[[Any], bytes]:
    """A function giving a value a digest that equal values share (maps and sets
    whatever their order; the same under every hash seed). It remembers each object's
    digest for as long as the function lives, so shared parts are digested once.
    With a ``budget``, it raises :class:`DigestBudgetExceeded` once it has visited
    that many items in all."""
    encoder = _Encoder("")
    encoder.budget = budget
    return encoder.digest


def encode_text(text: str) -> Any:
    """``text`` as JSON: itself, or ``{"$str": [...]}`` when it holds a lone surrogate.

    JSON can escape a lone surrogate, but reads a high one followed by a low one as a
    single character: written plainly, ``"\\ud800\\udc00"`` would come back changed."""
    if _SURROGATE.search(text) is None:
        return text
    return {"$str": _split_surrogates(text)}


def decode_text(raw: Any, where: str = "") -> str:
    """The string :func:`encode_text` wrote; anything else raises
    :class:`ValueCodecError` whose ``path`` is ``where``."""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, dict) and list(raw) == ["$str"]:
        return _Decoder().tagged("$str", raw["$str"], where, 0)
    raise ValueCodecError(where, f"expected a string, got {_kind(raw)} {_show(raw)}")


def encode_value(value: Any, where: str = "") -> Any:
    """A JSON-ready form of ``value``, tagged where JSON lacks a type (see module doc).

    Never recurses deeper than :data:`CHUNK_DEPTH` and writes each shared object
    once. Raises :class:`ValueCodecError` for a type no trace can hold.
    """
    return _Encoder(where).encode(value)


# -- decoding ----------------------------------------------------------------------------

#: Types the decoder makes that are set items as they are (:func:`value_key` keeps them).
_SET_ITEM_TYPES = frozenset({frozenset, HashableMap, str, int, bool, float, type(None),
                             Keyword, Fn, Failure})
#: Most JSON nesting :func:`decode_value` accepts (the encoder stays far below).
MAX_JSON_DEPTH = 4 * CHUNK_DEPTH + 32


def _kind(v: Any) -> str:
    return {str: "a string", int: "an integer", bool: "true/false", list: "a list",
            dict: "an object", float: "a number", type(None): "null"}.get(
        type(v), type(v).__name__)


def _show(v: Any) -> str:
    try:
        text = repr(v)
    except Exception:
        text = f"<{type(v).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


class _Decoder:
    def __init__(self) -> None:
        self.nodes: list[Any] | None = None

    def bad(self, path: str, problem: str) -> ValueCodecError:
        return ValueCodecError(path, problem)

    def value(self, raw: Any, path: str, depth: int) -> Any:
        if depth > MAX_JSON_DEPTH:
            raise self.bad(path, f"nested deeper than {MAX_JSON_DEPTH} levels")
        if isinstance(raw, list):
            return self.items(raw, path, depth)
        if isinstance(raw, dict):
            if len(raw) == 1:
                (tag,) = raw
                if isinstance(tag, str) and tag.startswith("$"):
                    return self.tagged(tag, raw[tag], path, depth)
            return {k: self.value(v, f"{path}.{k}" if path else k, depth + 1)
                    for k, v in raw.items()}
        if isinstance(raw, str):
            return raw
        if raw is None or isinstance(raw, (bool, int)):
            return raw
        if isinstance(raw, float):
            if not math.isfinite(raw):
                raise self.bad(path, 'NaN and infinity must be written {"$float": "nan"}, '
                                     '"inf" or "-inf"')
            return raw
        raise self.bad(path, f"unexpected {type(raw).__name__}")

    def items(self, raw: list[Any], path: str, depth: int) -> list[Any]:
        """The decoded items of a JSON list (a fast path for refs and plain scalars:
        no path text is made unless an item needs it)."""
        nodes = self.nodes
        out = []
        for i, v in enumerate(raw):
            t = type(v)
            if t is int or t is bool or v is None or t is str:
                out.append(v)
            elif (t is dict and nodes is not None and len(v) == 1 and "$ref" in v
                    and type(v["$ref"]) is int and 0 <= v["$ref"] < len(nodes)):
                out.append(nodes[v["$ref"]])
            else:
                out.append(self.value(v, f"{path}[{i}]", depth + 1))
        return out

    def key(self, raw: Any, path: str, depth: int) -> Any:
        v = self.value(raw, path, depth)
        try:
            return value_key(v)
        except TypeError as exc:
            raise self.bad(path, f"cannot be a map key or set item ({exc})") from None

    def tagged(self, tag: str, body: Any, path: str, depth: int) -> Any:
        at = f"{path}.{tag}" if path else tag
        if tag == "$kw":
            if isinstance(body, str):
                return Keyword(body)
            if isinstance(body, dict) and list(body) == ["$str"]:
                return Keyword(self.tagged("$str", body["$str"], at, depth + 1))
            raise self.bad(at, f"expected a string, got {_kind(body)} {_show(body)}")
        if tag == "$float":
            if body in ("nan", "inf", "-inf") and isinstance(body, str):
                return float(body)
            raise self.bad(at, f'expected "nan", "inf" or "-inf", got {_show(body)}')
        if tag == "$int":
            if not isinstance(body, str) or _HEX.match(body) is None:
                raise self.bad(at, f'expected a hex string such as "0x1f" or "-0x1f", got '
                                   f'{_show(body)}')
            if len(body) > MAX_INT_HEX_DIGITS + 3:
                raise self.bad(at, f"integer longer than {MAX_INT_HEX_DIGITS} hex digits")
            return int(body, 16)
        if tag == "$str":
            if not isinstance(body, list):
                raise self.bad(at, f"expected a list of strings and code points, got "
                                   f"{_kind(body)}")
            parts = []
            for i, p in enumerate(body):
                if isinstance(p, str):
                    parts.append(p)
                elif isinstance(p, int) and not isinstance(p, bool) and 0 <= p <= 0x10FFFF:
                    parts.append(chr(p))
                else:
                    raise self.bad(f"{at}[{i}]", f"expected a string or a code point "
                                                 f"(0..1114111), got {_show(p)}")
            return "".join(parts)
        if tag == "$regex":
            if not isinstance(body, str):
                raise self.bad(at, f"expected the pattern as a string, got {_kind(body)}")
            return RegexValue(body)
        if tag == "$set":
            if not isinstance(body, list):
                raise self.bad(at, f"expected a list of items, got {_kind(body)} "
                                   f"{_show(body)}")
            if self.nodes is not None:
                shared = self.ref_set(body)
                if shared is not None:
                    return shared
            return frozenset(self.key(v, f"{at}[{i}]", depth + 2) for i, v in enumerate(body))
        if tag == "$map":
            if not isinstance(body, list):
                raise self.bad(at, f"expected a list of [key, value] pairs, got {_kind(body)}")
            out = {}
            for i, pair in enumerate(body):
                if not isinstance(pair, list) or len(pair) != 2:
                    raise self.bad(f"{at}[{i}]", f"expected a [key, value] pair, got "
                                                 f"{_show(pair)}")
                out[self.key(pair[0], f"{at}[{i}][0]", depth + 3)] = self.value(
                    pair[1], f"{at}[{i}][1]", depth + 3)
            return out
        if tag == "$fn":
            return self.fn(body, at)
        if tag == "$fail":
            if not isinstance(body, dict) or set(body) != {"reason", "message"}:
                raise self.bad(at, 'expected {"reason": string, "message": string}, got '
                                   f"{_show(body)}")
            return Failure(decode_text(body["reason"], f"{at}.reason"),
                           decode_text(body["message"], f"{at}.message"))
        if tag == "$graph":
            return self.graph(body, at)
        if tag == "$ref":
            if self.nodes is None:
                raise self.bad(at, "a $ref is only valid inside a $graph")
            if not isinstance(body, int) or isinstance(body, bool) or not (
                    0 <= body < len(self.nodes)):
                raise self.bad(at, f"expected the index of an earlier $graph node "
                                   f"(0..{len(self.nodes) - 1}), got {_show(body)}")
            return self.nodes[body]
        raise self.bad(at, f"unknown tag {tag!r} (tags: {', '.join(TAGS)}; a map with "
                           f"one '$' key is written {{\"$map\": [[key, value]]}})")

    def ref_set(self, body: list[Any]) -> frozenset[Any] | None:
        """The set a ``$set`` of ``{"$ref": i}`` items only stands for, read in bulk
        (a set of shared values: each item is a node, already a valid set item), or
        None when ``body`` is anything else (read item by item, with its messages)."""
        nodes = self.nodes
        if not body or nodes is None or set(map(type, body)) != {dict}:
            return None
        try:
            if set(map(len, body)) != {1}:
                return None
            refs = [item["$ref"] for item in body]
        except KeyError:  # not {"$ref": ...} objects
            return None
        if set(map(type, refs)) != {int} or min(refs) < 0 or max(refs) >= len(nodes):
            return None
        items = list(map(nodes.__getitem__, refs))
        if not set(map(type, items)) <= _SET_ITEM_TYPES:
            return None  # e.g. a list: made hashable item by item
        return frozenset(items)

    def fn(self, body: Any, at: str) -> Fn:
        if not isinstance(body, dict):
            raise self.bad(at, f"expected an object, got {_kind(body)}")
        extra = set(body) - {"params", "doc", "return_type"}
        if extra:
            raise self.bad(at, f"unknown field(s) {', '.join(sorted(extra))}; expected "
                               f"params, doc, return_type")
        params = body.get("params", [])
        if not isinstance(params, list) or not all(isinstance(p, str) for p in params):
            raise self.bad(f"{at}.params", f"expected a list of strings, got {_show(params)}")
        for key in ("doc", "return_type"):
            if body.get(key) is not None and not isinstance(body[key], str):
                raise self.bad(f"{at}.{key}", f"expected a string or null, got "
                                              f"{_show(body[key])}")
        return Fn(tuple(params), body.get("doc"), body.get("return_type"))

    def graph(self, body: Any, at: str) -> Any:
        if self.nodes is not None:
            raise self.bad(at, "a $graph cannot hold another $graph")
        if not isinstance(body, list) or not body:
            raise self.bad(at, "expected a non-empty list of nodes")
        nodes: list[Any] = []
        self.nodes = nodes
        try:
            for i, node in enumerate(body):
                nodes.append(self.value(node, f"{at}[{i}]", 0))
        finally:
            self.nodes = None
        return nodes[-1]


def decode_value(raw: Any, where: str = "") -> Any:
    """The value :func:`encode_value` wrote; malformed input raises :class:`ValueCodecError`
    whose ``path`` starts with ``where``."""
    return _Decoder().value(raw, where, 0)


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
                  digests: _Encoder) -> list[tuple[Any, Any]] | None:
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
    digests = _Encoder("")
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
        elif _is_container(x) or _is_container(y) or x != y:
            return False
    return True
