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

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from turnpress.core.clojure import set_sort_key
from turnpress.core.model import Failure, Fn, HashableMap, Keyword
from turnpress.core.values import (
    DigestBudgetExceeded,
    Digester,
    RegexValue,
    is_container,
    is_regex,
    same_value,
    value_digester,
    value_key,
)

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


# -- encoding ----------------------------------------------------------------------------


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
        self.index: dict[int, int] = {}  # id(node root) -> its $graph index
        self.nodes: list[Any] = []

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

        try:
            return sorted(items, key=key)
        except TypeError:  # e.g. a float key next to an unorderable one
            return sorted(items, key=self.digest)

    def plan(self, root: Any) -> tuple[set[int], list[Any]]:
        """Which objects become nodes of their own, and those objects in post-order."""
        counts: dict[int, int] = {}
        children: dict[int, list[Any]] = {}
        stack = [root]
        while stack:
            v = stack.pop()
            i = id(v)
            if i in counts:  # met again (pushed twice before its first visit)
                counts[i] += 1
                continue
            counts[i] = 1
            if not is_container(v):
                continue
            kids = list(self.children(v))
            children[i] = kids
            for k in kids:  # each shared object's parts are walked once
                if type(k) in _PLAIN_SCALARS or not _shareable(k):
                    continue
                j = id(k)
                if j in counts:
                    counts[j] += 1
                else:
                    stack.append(k)
        shared = {i for i, c in counts.items() if c > 1}
        # second walk: a node starts at the root, at every shared object and every
        # CHUNK_DEPTH collections down; record the node roots in post-order
        roots: set[int] = {id(root)} | shared
        order: list[Any] = []
        seen: set[int] = set()
        walk: list[tuple[Any, int, bool]] = [(root, 0, False)]
        while walk:
            v, depth, exiting = walk.pop()
            i = id(v)
            if exiting:
                if i in roots:
                    order.append(v)
                continue
            if not is_container(v):
                if i in shared and i not in seen:
                    seen.add(i)
                    order.append(v)
                continue
            if i in roots and v is not root:
                if i in seen:
                    continue
                depth = 0
            elif depth >= CHUNK_DEPTH:
                roots.add(i)
                depth = 0
            seen.add(i)
            walk.append((v, depth, True))
            walk.extend((k, depth + 1, False) for k in reversed(children[i])
                        if type(k) not in _PLAIN_SCALARS and id(k) not in seen)
        return roots, order

    def encode(self, root: Any) -> Any:
        if not _shareable(root) or not is_container(root):
            return self.scalar(root, "")
        roots, order = self.plan(root)
        if len(roots) == 1 and len(order) == 1:
            # no sharing, no deep nesting: the plain form
            return self.body(root, roots, 0)
        for v in order:
            self.index[id(v)] = len(self.nodes)
            self.nodes.append(self.body(v, roots, 0) if is_container(v)
                              else self.scalar(v, ""))
        return {"$graph": self.nodes}

    def body(self, v: Any, roots: set[int], depth: int, top: bool = True) -> Any:
        if not top and id(v) in roots:
            return {"$ref": self.index[id(v)]}
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
            return {"$set": self.items(self.sorted_set(v), roots, d)}
        return self.items(v, roots, d)

    def items(self, xs: Iterable[Any], roots: set[int], depth: int) -> list[Any]:
        """The encoded items of a list or set (a fast path for refs and small ints)."""
        index = self.index
        out = []
        for x in xs:
            j = id(x)
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
