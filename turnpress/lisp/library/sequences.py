"""Built-ins over sequences (eager: every result is a list) and function combinators."""

from __future__ import annotations

import functools
import math
from typing import Any

from turnpress.core.model import Keyword
from turnpress.lisp.errors import LispError
from turnpress.lisp.library.registry import CORE, core
from turnpress.lisp.values import (
    MISSING,
    CoreFn,
    compare,
    freeze,
    is_map,
    is_seq,
    kind_name,
    seq,
    truthy,
)

_HASHABLE = frozenset({str, int, float, bool, type(None), Keyword})


def _hkey(x: Any, ctx: Any) -> Any:
    """``x`` as a dict key / set member."""
    return x if type(x) in _HASHABLE else freeze(x, ctx)


def _n(x: Any, fname: str) -> int:
    if type(x) is int:
        return x
    if type(x) is float and math.isfinite(x):
        return int(x)
    raise LispError("type_error", f"{fname} expects a number, got {kind_name(x)}")


# --- mapping and filtering ------------------------------------------------------------------


@core("map", "(map f coll) or (map f c1 c2 ...): f applied to each item (or to items of "
      "the collections side by side).", category="seqs", aliases=("mapv",))
def map_(ctx: Any, f: Any, coll: Any, *colls: Any) -> list[Any]:
    fn = ctx.as_fn(f)
    if not colls:
        items = seq(coll)
        ctx.charge(len(items))
        return [fn(x) for x in items]
    seqs = [seq(coll), *(seq(c) for c in colls)]
    ctx.charge(min(len(s) for s in seqs))
    return [fn(*xs) for xs in zip(*seqs, strict=False)]


@core("filter", "(filter pred coll): items for which pred is truthy.", category="seqs",
      aliases=("filterv",))
def filter_(ctx: Any, pred: Any, coll: Any) -> list[Any]:
    fn = ctx.as_fn(pred)
    items = seq(coll)
    ctx.charge(len(items))
    return [x for x in items if (r := fn(x)) is not None and r is not False]


@core("remove", "(remove pred coll): items for which pred is falsey.", category="seqs")
def remove(ctx: Any, pred: Any, coll: Any) -> list[Any]:
    fn = ctx.as_fn(pred)
    items = seq(coll)
    ctx.charge(len(items))
    return [x for x in items if (r := fn(x)) is None or r is False]


@core("keep", "(keep f coll): the non-nil results of (f item).", category="seqs")
def keep(ctx: Any, f: Any, coll: Any) -> list[Any]:
    fn = ctx.as_fn(f)
    items = seq(coll)
    ctx.charge(len(items))
    return [y for y in (fn(x) for x in items) if y is not None]


@core("map-indexed", "(map-indexed f coll): (f index item) for each item.", category="seqs")
def map_indexed(ctx: Any, f: Any, coll: Any) -> list[Any]:
    fn = ctx.as_fn(f)
    items = seq(coll)
    ctx.charge(len(items))
    return [fn(i, x) for i, x in enumerate(items)]


@core("mapcat", "(mapcat f coll): the results of (f item) concatenated.", category="seqs")
def mapcat(ctx: Any, f: Any, coll: Any, *colls: Any) -> list[Any]:
    out: list[Any] = []
    for part in map_(ctx, f, coll, *colls):
        part = seq(part)
        ctx.check_count(len(out) + len(part))
        out.extend(part)
    return out


@core("reduce", "(reduce f coll) or (reduce f init coll): fold the items with "
      "(f acc item).", category="seqs")
def reduce_(ctx: Any, f: Any, a: Any, b: Any = MISSING) -> Any:
    fn = ctx.as_fn(f)
    if b is MISSING:
        items = seq(a)
        if not items:
            return fn()
        acc, items = items[0], items[1:]
    else:
        acc, items = a, seq(b)
    ctx.charge(len(items))
    for x in items:
        acc = fn(acc, x)
    return acc


@core("reduce-kv", "(reduce-kv f init m): fold a map with (f acc k v).", category="seqs")
def reduce_kv(ctx: Any, f: Any, init: Any, m: Any) -> Any:
    fn = ctx.as_fn(f)
    if m is None:
        return init
    if not is_map(m):
        raise LispError("type_error", f"reduce-kv expects a map, got {kind_name(m)}")
    ctx.charge(len(m))
    for k, v in m.items():
        init = fn(init, k, v)
    return init


@core("some", "(some pred coll): the first truthy (pred item), or nil.", category="seqs")
def some(ctx: Any, pred: Any, coll: Any) -> Any:
    fn = ctx.as_fn(pred)
    for x in seq(coll):
        ctx.charge(1)
        r = fn(x)
        if truthy(r):
            return r
    return None


@core("every?", "(every? pred coll): pred is truthy for all items.", category="seqs")
def every(ctx: Any, pred: Any, coll: Any) -> bool:
    fn = ctx.as_fn(pred)
    for x in seq(coll):
        ctx.charge(1)
        if not truthy(fn(x)):
            return False
    return True


@core("not-any?", "(not-any? pred coll): pred is truthy for no item.", category="seqs")
def not_any(ctx: Any, pred: Any, coll: Any) -> bool:
    return some(ctx, pred, coll) is None


@core("not-every?", "(not-every? pred coll): pred is falsey for some item.", category="seqs")
def not_every(ctx: Any, pred: Any, coll: Any) -> bool:
    return not every(ctx, pred, coll)


# --- sorting and grouping ------------------------------------------------------------------


def _sorted(ctx: Any, items: list[Any], keys: list[Any], comparator: Any) -> list[Any]:
    """``items`` ordered by ``keys`` (``compare`` order, or a Lisp comparator fn)."""
    ctx.charge(len(items))
    order = range(len(items))
    reverse = False
    if comparator is not MISSING:
        if comparator is CORE[">"] or comparator is CORE[">="]:
            reverse = True
        elif not (comparator is CORE["<"] or comparator is CORE["<="]
                  or comparator is CORE["compare"]):
            fn = ctx.as_fn(comparator)

            def cmp(i: int, j: int) -> int:
                r = fn(keys[i], keys[j])
                if r is True:
                    return -1
                if r is None or r is False:
                    return 1 if truthy(fn(keys[j], keys[i])) else 0
                if type(r) is int or type(r) is float:
                    return -1 if r < 0 else (1 if r > 0 else 0)
                raise LispError("type_error", "a sort comparator must return a boolean or "
                                              f"a number, got {kind_name(r)}")

            return [items[i] for i in sorted(order, key=functools.cmp_to_key(cmp))]
    kinds = {type(k) for k in keys}
    if kinds and (kinds <= {int, float} or kinds == {str} or kinds == {Keyword}):
        if kinds == {Keyword}:
            idx = sorted(order, key=lambda i: keys[i].name, reverse=reverse)
        else:
            idx = sorted(order, key=keys.__getitem__, reverse=reverse)
    else:
        def cmp2(i: int, j: int) -> int:
            ctx.charge(1)
            return compare(keys[i], keys[j], ctx)

        idx = sorted(order, key=functools.cmp_to_key(cmp2), reverse=reverse)
    return [items[i] for i in idx]


@core("sort", "(sort coll) or (sort comparator coll): items in order (stable). Use > for "
      "descending.", category="seqs")
def sort(ctx: Any, a: Any, b: Any = MISSING) -> list[Any]:
    comparator, coll = (MISSING, a) if b is MISSING else (a, b)
    items = list(seq(coll))
    return _sorted(ctx, items, items, comparator)


@core("sort-by", "(sort-by keyfn coll) or (sort-by keyfn comparator coll): items ordered "
      "by (keyfn item).", category="seqs")
def sort_by(ctx: Any, keyfn: Any, a: Any, b: Any = MISSING) -> list[Any]:
    comparator, coll = (MISSING, a) if b is MISSING else (a, b)
    items = list(seq(coll))
    fn = ctx.as_fn(keyfn)
    ctx.charge(len(items))
    return _sorted(ctx, items, [fn(x) for x in items], comparator)


@core("group-by", "(group-by f coll): a map from (f item) to the items with that result.",
      category="seqs")
def group_by(ctx: Any, f: Any, coll: Any) -> dict[Any, list[Any]]:
    fn = ctx.as_fn(f)
    items = seq(coll)
    ctx.charge(len(items))
    out: dict[Any, list[Any]] = {}
    for x in items:
        k = fn(x)
        if type(k) not in _HASHABLE:
            k = freeze(k, ctx)
        group = out.get(k)
        if group is None:
            out[k] = [x]
        else:
            group.append(x)
    return out


@core("frequencies", "A map from each distinct item to how often it occurs.",
      category="seqs")
def frequencies(ctx: Any, coll: Any) -> dict[Any, int]:
    items = seq(coll)
    ctx.charge(len(items))
    out: dict[Any, int] = {}
    for x in items:
        k = _hkey(x, ctx)
        out[k] = out.get(k, 0) + 1
    return out


@core("distinct", "The items without repeats, first occurrence kept.", category="seqs")
def distinct(ctx: Any, coll: Any) -> list[Any]:
    items = seq(coll)
    ctx.charge(len(items))
    seen: set[Any] = set()
    out = []
    for x in items:
        k = _hkey(x, ctx)
        if k not in seen:
            seen.add(k)
            out.append(x)
    return out


def _best_key(ctx: Any, f: Any, xs: tuple[Any, ...], better: Any) -> Any:
    fn = ctx.as_fn(f)
    ctx.charge(len(xs))
    best, best_k = xs[0], fn(xs[0])
    for x in xs[1:]:
        k = fn(x)
        if better(k, best_k):
            best, best_k = x, k
    return best


@core("max-key", "(max-key f x & xs): the argument with the largest (f x).",
      category="seqs")
def max_key(ctx: Any, f: Any, x: Any, *xs: Any) -> Any:
    return _best_key(ctx, f, (x, *xs), lambda a, b: a >= b)


@core("min-key", "(min-key f x & xs): the argument with the smallest (f x).",
      category="seqs")
def min_key(ctx: Any, f: Any, x: Any, *xs: Any) -> Any:
    return _best_key(ctx, f, (x, *xs), lambda a, b: a <= b)


# --- slicing -------------------------------------------------------------------------------------


@core("take", "(take n coll): the first n items.", category="seqs")
def take(ctx: Any, n: Any, coll: Any) -> list[Any]:
    n = max(_n(n, "take"), 0)
    ctx.charge_copy(n)
    return list(seq(coll)[:n])


@core("drop", "(drop n coll): all but the first n items.", category="seqs")
def drop(ctx: Any, n: Any, coll: Any) -> list[Any]:
    items = seq(coll)
    ctx.charge_copy(len(items))
    return list(items[max(_n(n, "drop"), 0):])


@core("take-last", "(take-last n coll): the last n items.", category="seqs")
def take_last(ctx: Any, n: Any, coll: Any) -> list[Any]:
    n = _n(n, "take-last")
    items = seq(coll)
    ctx.charge_copy(len(items))
    return list(items[len(items) - n:]) if n > 0 else []


@core("drop-last", "(drop-last coll) or (drop-last n coll): all but the last n (1) items.",
      category="seqs")
def drop_last(ctx: Any, a: Any, b: Any = MISSING) -> list[Any]:
    n, coll = (1, a) if b is MISSING else (_n(a, "drop-last"), b)
    items = seq(coll)
    ctx.charge_copy(len(items))
    return list(items[: max(len(items) - n, 0)])


@core("butlast", "All but the last item.", category="seqs")
def butlast(ctx: Any, coll: Any) -> list[Any]:
    return drop_last(ctx, coll)


@core("take-while", "(take-while pred coll): items up to the first falsey (pred item).",
      category="seqs")
def take_while(ctx: Any, pred: Any, coll: Any) -> list[Any]:
    fn = ctx.as_fn(pred)
    out = []
    for x in seq(coll):
        ctx.charge(1)
        if not truthy(fn(x)):
            break
        out.append(x)
    return out


@core("drop-while", "(drop-while pred coll): items from the first falsey (pred item) on.",
      category="seqs")
def drop_while(ctx: Any, pred: Any, coll: Any) -> list[Any]:
    fn = ctx.as_fn(pred)
    items = seq(coll)
    for i, x in enumerate(items):
        ctx.charge(1)
        if not truthy(fn(x)):
            return list(items[i:])
    return []


@core("reverse", "The items in reverse order.", category="seqs")
def reverse(ctx: Any, coll: Any) -> list[Any]:
    items = seq(coll)
    ctx.charge_copy(len(items))
    return list(items[::-1])


@core("concat", "(concat & colls): the items of all the collections in one list.",
      category="seqs")
def concat(ctx: Any, *colls: Any) -> list[Any]:
    parts = [seq(c) for c in colls]
    ctx.check_count(sum(len(p) for p in parts))
    out: list[Any] = []
    for p in parts:
        out.extend(p)
    return out


@core("partition", "(partition n coll) or (partition n step coll): lists of n items "
      "(an incomplete last one is dropped).", category="seqs")
def partition(ctx: Any, n: Any, a: Any, b: Any = MISSING) -> list[list[Any]]:
    return _partition(ctx, "partition", n, a, b, keep_tail=False)


@core("partition-all", "Like partition, but keeps an incomplete last list.", category="seqs")
def partition_all(ctx: Any, n: Any, a: Any, b: Any = MISSING) -> list[list[Any]]:
    return _partition(ctx, "partition-all", n, a, b, keep_tail=True)


def _partition(ctx: Any, name: str, n: Any, a: Any, b: Any, keep_tail: bool) -> list[Any]:
    size = _n(n, name)
    step, coll = (size, a) if b is MISSING else (_n(a, name), b)
    if size <= 0 or step <= 0:
        raise LispError("runtime_error", f"{name} needs a positive size and step")
    items = seq(coll)
    ctx.charge(len(items) // step + 1)
    out = []
    for i in range(0, len(items), step):
        chunk = list(items[i:i + size])
        if len(chunk) < size and not keep_tail:
            break
        out.append(chunk)
    return out


@core("interpose", "(interpose sep coll): the items with sep between them.", category="seqs")
def interpose(ctx: Any, sep: Any, coll: Any) -> list[Any]:
    items = seq(coll)
    ctx.check_count(2 * len(items))
    out = []
    for i, x in enumerate(items):
        if i:
            out.append(sep)
        out.append(x)
    return out


@core("flatten", "Nested vectors flattened into one list (maps and sets stay whole).",
      category="seqs")
def flatten(ctx: Any, coll: Any) -> list[Any]:
    if not is_seq(coll):
        return []
    out: list[Any] = []
    stack = [iter(coll)]
    while stack:
        for x in stack[-1]:
            ctx.charge(1)
            if is_seq(x):
                stack.append(iter(x))
                break
            out.append(x)
        else:
            stack.pop()
    ctx.check_count(len(out))
    return out


@core("range", "(range end), (range start end) or (range start end step): numbers from "
      "start (0) up to but excluding end.", category="seqs")
def range_(ctx: Any, *args: Any) -> list[Any]:
    if not args or len(args) > 3:
        raise LispError("arity_error", "range takes 1 to 3 arguments (an endless (range) is "
                                       "not supported)")
    start, end, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1],
                                                                args[2] if len(args) == 3
                                                                else 1)
    for x in (start, end, step):
        if type(x) not in (int, float):
            raise LispError("type_error", f"range expects numbers, got {kind_name(x)}")
    if step == 0:
        raise LispError("runtime_error", "range with step 0 never ends")
    if type(start) is int and type(end) is int and type(step) is int:
        r = range(start, end, step)
        ctx.check_count(len(r))
        return list(r)
    try:
        n = max(math.ceil((end - start) / step), 0)
    except (OverflowError, ValueError):
        raise LispError("size_limit", "range too large") from None
    ctx.check_count(n)
    return [start + i * step for i in range(n)]


@core("repeat", "(repeat n x): a list of n copies of x.", category="seqs")
def repeat(ctx: Any, n: Any, x: Any = MISSING) -> list[Any]:
    if x is MISSING:
        raise LispError("arity_error", "repeat needs a count: (repeat n x)")
    n = max(_n(n, "repeat"), 0)
    ctx.check_count(n)
    return [x] * n


# --- functions ------------------------------------------------------------------------------


@core("apply", "(apply f args) or (apply f x y args): call f with the items of args as "
      "arguments.", category="higher")
def apply(ctx: Any, f: Any, *args: Any) -> Any:
    if not args:
        raise LispError("arity_error", "apply needs a list of arguments")
    last = seq(args[-1])
    ctx.check_count(len(last) + len(args) - 1, "argument list")
    ctx.charge(1)
    return ctx.call(f, (*args[:-1], *last))


def _make_fn(name: str, impl: Any) -> CoreFn:
    return CoreFn(params=("&", "args"), name=name, impl=impl, min_args=0, max_args=None,
                  needs_ctx=True)


@core("comp", "(comp f g ...): a function applying the rightmost first: ((comp f g) x) is "
      "(f (g x)).", category="higher")
def comp(*fs: Any) -> Any:
    if not fs:
        return CORE["identity"]
    last, rest = fs[-1], fs[-2::-1]

    def composed(ctx: Any, *args: Any) -> Any:
        ctx.charge(1)
        r = ctx.call(last, args)
        for f in rest:
            ctx.charge(1)
            r = ctx.call(f, (r,))
        return r

    return _make_fn("comp", composed)


@core("partial", "(partial f & args): f with the first arguments filled in.",
      category="higher")
def partial(f: Any, *first: Any) -> Any:
    def partial_fn(ctx: Any, *args: Any) -> Any:
        ctx.charge(1 + ((len(first) + len(args)) >> 8))
        return ctx.call(f, (*first, *args))

    return _make_fn("partial", partial_fn)


@core("complement", "(complement f): a function returning (not (f ...)).", category="higher")
def complement(f: Any) -> Any:
    def complement_fn(ctx: Any, *args: Any) -> Any:
        ctx.charge(1)
        return not truthy(ctx.call(f, args))

    return _make_fn("complement", complement_fn)


@core("juxt", "(juxt f g ...): a function returning [(f x) (g x) ...].", category="higher")
def juxt(f: Any, *fs: Any) -> Any:
    all_fs = (f, *fs)

    def juxt_fn(ctx: Any, *args: Any) -> list[Any]:
        out = []
        for g in all_fs:
            ctx.charge(1)
            out.append(ctx.call(g, args))
        return out

    return _make_fn("juxt", juxt_fn)


@core("constantly", "(constantly x): a function that always returns x.", category="higher")
def constantly(x: Any) -> Any:
    def constantly_fn(ctx: Any, *args: Any) -> Any:
        ctx.charge(1)
        return x

    return _make_fn("constantly", constantly_fn)
