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
from typing import Any

from turnpress.core.codec_encode import (
    CHUNK_DEPTH,
    ValueCodecError,
    encode_text,
    encode_value,
    encoded_json,
)
from turnpress.core.model import Failure, Fn, HashableMap, Keyword
from turnpress.core.values import (
    DigestBudgetExceeded,
    RegexValue,
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
    "encoded_json",
    "is_regex",
    "same_value",
    "value_digester",
    "value_key",
]

#: Most hex digits of a ``{"$int": ...}`` (about 4 million bits).
MAX_INT_HEX_DIGITS = 1_000_000
TAGS = ("$kw", "$set", "$fn", "$map", "$fail", "$float", "$int", "$str", "$regex",
        "$graph", "$ref")
_HEX = re.compile(r"-?0x[0-9a-f]+\Z")


# -- decoding (the encoder is turnpress.core.codec_encode) ---------------------------------


def decode_text(raw: Any, where: str = "") -> str:
    """The string :func:`encode_text` wrote; anything else raises
    :class:`ValueCodecError` whose ``path`` is ``where``."""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, dict) and list(raw) == ["$str"]:
        return _Decoder().tagged("$str", raw["$str"], where, 0)
    raise ValueCodecError(where, f"expected a string, got {_kind(raw)} {_show(raw)}")


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

