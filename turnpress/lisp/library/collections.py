"""Built-ins for looking things up in collections and building new ones.

A keyword key also finds, updates or removes the string key of the same name
when the keyword key itself is absent (data from JSON has string keys).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from turnpress.core.model import Fn, Keyword
from turnpress.lisp.errors import LispError
from turnpress.lisp.library.registry import core
from turnpress.lisp.render import short
from turnpress.lisp.values import (
    MISSING,
    freeze,
    is_map,
    is_seq,
    is_set,
    kind_name,
    lookup,
    map_key,
    seq,
)


def _map_arg(m: Any, fname: str) -> Mapping[Any, Any]:
    if m is None:
        return {}
    if isinstance(m, Mapping):
        return m
    raise LispError("type_error", f"{fname} expects a map, got {kind_name(m)}")


def _key(k: Any) -> Any:
    try:
        hash(k)
    except TypeError:
        return freeze(k)
    return k


# --- lookup ---------------------------------------------------------------------------


@core("get", "(get coll key) or (get coll key default): value at key (map), index (vector) "
      "or member (set).", category="access", binary=lookup)
def get(coll: Any, key: Any, default: Any = None) -> Any:
    return lookup(coll, key, default)


@core("get-in", "(get-in coll [k1 k2 ...]) or with a default: nested get.", category="access")
def get_in(ctx: Any, coll: Any, path: Any, default: Any = None) -> Any:
    for k in seq(path):
        ctx.charge(1)
        coll = lookup(coll, k, MISSING)
        if coll is MISSING:
            return default
    return coll


@core("contains?", "Whether a map has the key (keyword or same-name string), a set the "
      "member, or a vector the index.", category="access")
def contains(coll: Any, key: Any) -> bool:
    return lookup(coll, key, MISSING) is not MISSING


@core("keys", "The keys of a map, as a list.", category="access")
def keys(ctx: Any, m: Any) -> Any:
    if m is None:
        return None
    m = _map_arg(m, "keys")
    ctx.charge_copy(len(m))
    return list(m.keys())


@core("vals", "The values of a map, as a list.", category="access")
def vals(ctx: Any, m: Any) -> Any:
    if m is None:
        return None
    m = _map_arg(m, "vals")
    ctx.charge_copy(len(m))
    return list(m.values())


@core("select-keys", "A map with only the given keys (those present).", category="access")
def select_keys(ctx: Any, m: Any, ks: Any) -> dict[Any, Any]:
    m = _map_arg(m, "select-keys")
    out = {}
    for k in seq(ks):
        ctx.charge(1)
        v = lookup(m, k, MISSING)
        if v is not MISSING:
            out[_key(k)] = v
    return out


def _assoc1(ctx: Any, coll: Any, k: Any, v: Any) -> Any:
    if hasattr(coll, "__len__"):
        ctx.charge_copy(len(coll))
    if coll is None or isinstance(coll, Mapping):
        out = dict(coll) if coll is not None else {}
        out[map_key(out, _key(k))] = v
        return out
    if is_seq(coll):
        if type(k) is not int or not 0 <= k <= len(coll):
            raise LispError("runtime_error",
                            f"assoc index {short(k)} out of bounds for a vector of {len(coll)}")
        out_list = list(coll)
        if k == len(out_list):
            out_list.append(v)
        else:
            out_list[k] = v
        return out_list
    raise LispError("type_error", f"assoc expects a map or vector, got {kind_name(coll)}")


@core("assoc", "(assoc m k v & kvs): m with the keys set (vectors: index).", category="access")
def assoc(ctx: Any, coll: Any, k: Any, v: Any, *kvs: Any) -> Any:
    if len(kvs) % 2:
        raise LispError("arity_error", "assoc expects an even number of key/value arguments")
    coll = _assoc1(ctx, coll, k, v)
    for i in range(0, len(kvs), 2):
        coll = _assoc1(ctx, coll, kvs[i], kvs[i + 1])
    return coll


def _assoc_in(ctx: Any, coll: Any, path: list[Any], v: Any) -> Any:
    ctx.charge(1)
    k = path[0]
    if len(path) == 1:
        return _assoc1(ctx, coll, k, v)
    return _assoc1(ctx, coll, k, _assoc_in(ctx, lookup(coll, k), path[1:], v))


@core("assoc-in", "(assoc-in m [k1 k2 ...] v): nested assoc, creating maps as needed.",
      category="access")
def assoc_in(ctx: Any, coll: Any, path: Any, v: Any) -> Any:
    path = list(seq(path))
    if not path:
        return v
    return _assoc_in(ctx, coll, path, v)


@core("dissoc", "(dissoc m & ks): m without the keys.", category="access")
def dissoc(ctx: Any, m: Any, *ks: Any) -> Any:
    if m is None:
        return None
    out = dict(_map_arg(m, "dissoc"))
    ctx.charge_copy(len(out))
    for k in ks:
        out.pop(map_key(out, _key(k)), None)
    return out


@core("update", "(update m k f & args): m with k set to (f old-value args...).",
      category="access")
def update(ctx: Any, coll: Any, k: Any, f: Any, *args: Any) -> Any:
    return _assoc1(ctx, coll, k, ctx.call(f, (lookup(coll, k), *args)))


@core("update-in", "(update-in m [k1 k2 ...] f & args): nested update.", category="access")
def update_in(ctx: Any, coll: Any, path: Any, f: Any, *args: Any) -> Any:
    path = list(seq(path))
    if not path:
        return ctx.call(f, (coll, *args))
    old = get_in(ctx, coll, path)
    return _assoc_in(ctx, coll, path, ctx.call(f, (old, *args)))


@core("merge", "Maps merged left to right (later keys win); nil arguments are skipped.",
      category="access")
def merge(ctx: Any, *maps: Any) -> Any:
    if all(m is None for m in maps):
        return None
    out: dict[Any, Any] = {}
    for m in maps:
        if m is not None:
            m = _map_arg(m, "merge")
            ctx.charge_copy(len(m))
            out.update(m)
    return out


@core("merge-with", "(merge-with f & maps): merge, combining clashing values with "
      "(f old new).", category="access")
def merge_with(ctx: Any, f: Any, *maps: Any) -> Any:
    if all(m is None for m in maps):
        return None
    out: dict[Any, Any] = {}
    for m in maps:
        for k, v in _map_arg(m, "merge-with").items():
            ctx.charge(1)
            out[k] = ctx.call(f, (out[k], v)) if k in out else v
    return out


@core("zipmap", "(zipmap keys vals): a map pairing them up.", category="build")
def zipmap(ctx: Any, ks: Any, vs: Any) -> dict[Any, Any]:
    ks, vs = seq(ks), seq(vs)
    ctx.charge(min(len(ks), len(vs)))
    return {_key(k): v for k, v in zip(ks, vs, strict=False)}


@core("find", "(find m k): the entry [k v], or nil.", category="access")
def find(m: Any, k: Any) -> Any:
    m = _map_arg(m, "find")
    v = lookup(m, k, MISSING)
    return None if v is MISSING else [k, v]


# --- positions in sequences --------------------------------------------------------------


@core("count", "Number of items (characters for a string); (count nil) is 0.",
      category="seqs")
def count(coll: Any) -> int:
    if coll is None:
        return 0
    if isinstance(coll, (str, list, tuple, Mapping, set, frozenset)):
        return len(coll)
    raise LispError("type_error", f"count not supported on {kind_name(coll)}")


@core("first", "First item, or nil.", category="seqs")
def first(coll: Any) -> Any:
    if type(coll) is list or type(coll) is tuple or type(coll) is str:
        return coll[0] if coll else None
    if coll is None:
        return None
    if isinstance(coll, Mapping):
        for k, v in coll.items():
            return [k, v]
        return None
    for x in seq(coll):
        return x
    return None


def _items(ctx: Any, coll: Any) -> Any:
    """``seq(coll)``, counting the copy when a map or set has to be listed."""
    if type(coll) is list or type(coll) is tuple or type(coll) is str:
        return coll
    s = seq(coll)
    ctx.charge_copy(len(s))
    return s


@core("second", "Second item, or nil.", category="seqs")
def second(ctx: Any, coll: Any) -> Any:
    s = _items(ctx, coll)
    return s[1] if len(s) > 1 else None


@core("last", "Last item, or nil.", category="seqs")
def last(ctx: Any, coll: Any) -> Any:
    s = _items(ctx, coll)
    return s[-1] if s else None


@core("rest", "All but the first item (an empty list if none).", category="seqs")
def rest(ctx: Any, coll: Any) -> list[Any]:
    s = seq(coll)
    ctx.charge_copy(len(s))
    return list(s[1:])


@core("next", "All but the first item, or nil if none.", category="seqs")
def next_(ctx: Any, coll: Any) -> Any:
    s = seq(coll)
    ctx.charge_copy(len(s))
    return list(s[1:]) or None


@core("nth", "(nth coll i) or (nth coll i default): item at index i; an error if out of "
      "range and no default.", category="seqs")
def nth(ctx: Any, coll: Any, i: Any, default: Any = MISSING) -> Any:
    s = _items(ctx, coll)
    if type(i) is not int:
        raise LispError("type_error", f"nth expects an integer index, got {kind_name(i)}")
    if 0 <= i < len(s):
        return s[i]
    if default is MISSING:
        raise LispError("runtime_error", f"index {i} out of bounds for nth (count {len(s)})")
    return default


@core("empty?", "True for nil or an empty collection/string.", category="predicates")
def is_empty(coll: Any) -> bool:
    return count(coll) == 0


@core("not-empty", "coll, or nil if it is empty.", category="seqs")
def not_empty(coll: Any) -> Any:
    return None if count(coll) == 0 else coll


@core("seq", "The items as a list, or nil if empty (maps give [k v] entries).",
      category="seqs")
def seq_(ctx: Any, coll: Any) -> Any:
    s = seq(coll)
    ctx.charge_copy(len(s))
    return list(s) or None


# --- building ------------------------------------------------------------------------------


@core("conj", "(conj coll & xs): add items (end of a vector, into a set, [k v] or maps "
      "into a map); (conj nil x) is [x].", category="build")
def conj(ctx: Any, coll: Any, *xs: Any) -> Any:
    if coll is None or is_seq(coll):
        base = list(coll) if coll is not None else []
        ctx.check_count(len(base) + len(xs))
        base.extend(xs)
        return base
    if isinstance(coll, Mapping):
        out = dict(coll)
        ctx.charge_copy(len(out))
        for x in xs:
            if x is None:
                continue
            if isinstance(x, Mapping):
                out.update(x)
            elif is_seq(x) and len(x) == 2:
                out[map_key(out, _key(x[0]))] = x[1]
            else:
                raise LispError("type_error",
                                f"conj on a map expects [k v] or a map, got {short(x)}")
        ctx.check_count(len(out))
        return out
    if is_set(coll):
        ctx.check_count(len(coll) + len(xs))
        return frozenset(coll).union(freeze(x, ctx) for x in xs)
    raise LispError("type_error", f"conj expects a collection, got {kind_name(coll)}")


@core("cons", "(cons x coll): a list with x in front of coll's items.", category="build")
def cons(ctx: Any, x: Any, coll: Any) -> list[Any]:
    s = seq(coll)
    ctx.check_count(len(s) + 1)
    return [x, *s]


@core("into", "(into to from): to with all items of from added (like conj).",
      category="build")
def into(ctx: Any, to: Any, from_: Any) -> Any:
    items = seq(from_)
    if to is None or is_seq(to):
        base = list(to) if to is not None else []
        ctx.check_count(len(base) + len(items))
        base.extend(items)
        return base
    ctx.charge(len(items))
    return conj(ctx, to, *items)


@core("disj", "(disj set & xs): the set without xs.", category="build")
def disj(ctx: Any, s: Any, *xs: Any) -> Any:
    if s is None:
        return None
    if not is_set(s):
        raise LispError("type_error", f"disj expects a set, got {kind_name(s)}")
    ctx.charge_copy(len(s))
    return frozenset(s).difference(freeze(x, ctx) for x in xs)


@core("vec", "The items of a collection as a vector.", category="build")
def vec(ctx: Any, coll: Any) -> list[Any]:
    s = seq(coll)
    ctx.charge_copy(len(s))
    return list(s)


@core("set", "The items of a collection as a set.", category="build")
def set_(ctx: Any, coll: Any) -> frozenset[Any]:
    s = seq(coll)
    ctx.charge(len(s))
    try:
        return frozenset(s)
    except TypeError:
        return frozenset(freeze(x, ctx) for x in s)


@core("vector", "A vector of the arguments.", category="build", aliases=("list",))
def vector(*xs: Any) -> list[Any]:
    return list(xs)


@core("hash-map", "(hash-map k v ...): a map of the pairs.", category="build")
def hash_map(*kvs: Any) -> dict[Any, Any]:
    if len(kvs) % 2:
        raise LispError("arity_error", "hash-map expects an even number of arguments")
    return {_key(kvs[i]): kvs[i + 1] for i in range(0, len(kvs), 2)}


@core("hash-set", "A set of the arguments.", category="build")
def hash_set(ctx: Any, *xs: Any) -> frozenset[Any]:
    return frozenset(freeze(x, ctx) for x in xs)


@core("keyword", "(keyword \"a\") is :a.", category="build")
def keyword(x: Any) -> Keyword:
    if type(x) is Keyword:
        return x
    if type(x) is str and x:
        return Keyword(x)
    raise LispError("type_error", f"keyword expects a non-empty string, got {short(x)}")


@core("name", "The name of a keyword (:a -> \"a\"); a string is returned as is.",
      category="strings")
def name(x: Any) -> str:
    if type(x) is Keyword:
        return x.name
    if type(x) is str:
        return x
    raise LispError("type_error", f"name expects a keyword or string, got {kind_name(x)}")


# --- predicates -------------------------------------------------------------------------------


@core("nil?", "x is nil.", category="predicates")
def is_nil(x: Any) -> bool:
    return x is None


@core("some?", "x is not nil.", category="predicates")
def is_some(x: Any) -> bool:
    return x is not None


@core("true?", "x is true.", category="predicates")
def is_true(x: Any) -> bool:
    return x is True


@core("false?", "x is false.", category="predicates")
def is_false(x: Any) -> bool:
    return x is False


@core("string?", "A string.", category="predicates")
def is_string(x: Any) -> bool:
    return isinstance(x, str)


@core("keyword?", "A keyword.", category="predicates")
def is_keyword(x: Any) -> bool:
    return isinstance(x, Keyword)


@core("boolean?", "true or false.", category="predicates")
def is_boolean(x: Any) -> bool:
    return isinstance(x, bool)


@core("map?", "A map.", category="predicates")
def is_map_(x: Any) -> bool:
    return is_map(x)


@core("vector?", "A vector (list).", category="predicates",
      aliases=("sequential?", "seq?", "list?"))
def is_vector(x: Any) -> bool:
    return is_seq(x)


@core("set?", "A set.", category="predicates")
def is_set_(x: Any) -> bool:
    return is_set(x)


@core("coll?", "A vector, map or set.", category="predicates")
def is_coll(x: Any) -> bool:
    return is_seq(x) or is_map(x) or is_set(x)


@core("fn?", "A function.", category="predicates")
def is_fn(x: Any) -> bool:
    return isinstance(x, Fn)
