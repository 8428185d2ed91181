"""``to_clojure``: render any value the agent can hold as PTC-Lisp (Clojure) syntax.

The formatter is used for every sample and tool-call argument in a prompt, so it
must be cheap on huge values: it only ever looks at the first ``limit`` items of
a collection and the first ``printable_limit`` characters of a string. Values are
never walked deeper than :data:`MAX_DEPTH` collections (deeper parts show as
``...``), and a call with a ``limit`` stops growing after about
:data:`TEXT_CAP_FACTOR` x ``printable_limit`` characters (at least 320; the rest
shows as ``...``), so a value that shares structure (2^40 nodes when expanded) is
sampled in time proportional to the sample.
"""

from __future__ import annotations

import math
import numbers
import re
import threading
from collections.abc import Callable, Mapping
from itertools import islice
from operator import itemgetter
from typing import Any

from turnpress.core.model import Fn, Keyword
from turnpress.core.values import DigestBudgetExceeded, value_digester

__all__ = ["MAX_DEPTH", "TEXT_CAP_FACTOR", "set_sort_key", "to_clojure"]

#: Collections nested deeper than this render as ``...``.
MAX_DEPTH = 100
#: With a ``limit``, the whole text stops growing past this many times
#: ``printable_limit`` (256 when not given), and never below ``_MIN_TEXT_CAP``.
TEXT_CAP_FACTOR = 4
_MIN_TEXT_CAP = 320
_SURROGATE = re.compile("[\ud800-\udfff]")

_PLAIN_KEY = re.compile(r"[A-Za-z_*!?<>=][A-Za-z0-9_*!?<>=+.-]*\Z")
_MIN_BUDGET = 10
# Sets are sorted (for output that does not depend on hash seeds) up to this size;
# bigger ones show their first items in iteration order, so sampling stays O(limit).
_SORTED_SET_MAX = 1024


def to_clojure(
    value: Any, limit: int | None = None, printable_limit: int | None = None,
    max_chars: int | None = None, *, tick: Callable[[], None] | None = None,
) -> tuple[str, bool]:
    """Render ``value`` in Clojure syntax; return ``(text, truncated)``.

    ``limit`` caps the items shown per collection (the rest become `` ...``, and
    the outermost truncated collection adds `` (N items, showing first M)``);
    ``printable_limit`` caps string length (cut strings end in ``...``) and is
    shared out among the items of a collection, never below 10 characters each.
    ``truncated`` is true exactly when something was left out. ``max_chars`` stops
    the text growing past about that many characters (the rest shows as ``...``)
    without a ``limit``: a value sharing structure is then printed in time
    proportional to ``max_chars``, not to its expanded tree. ``tick`` is called after
    every 4,096 values rendered, so a caller can stop a long rendering by raising
    (the sandbox checks its clock there).
    """
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit}")
    if printable_limit is not None and printable_limit < 0:
        raise ValueError(f"printable_limit must be >= 0 or None, got {printable_limit}")
    cap = None
    if limit is not None:
        cap = max(TEXT_CAP_FACTOR * (printable_limit if printable_limit is not None
                                     else 256), _MIN_TEXT_CAP)
    if max_chars is not None:
        cap = max_chars if cap is None else min(cap, max_chars)
    fmt = _Formatter(limit, cap)
    fmt.tick = tick
    top = _sorted.memo is None
    if top:
        _sorted.memo, _sorted.keys, _sorted.digest = {}, {}, None
    try:
        text = fmt.render(value, printable_limit, set())
    finally:
        if top:
            _sorted.memo = _sorted.keys = _sorted.digest = None
    if fmt.outer_total is not None:
        text += f" ({fmt.outer_total} items, showing first {fmt.outer_shown})"
    return text, fmt.truncated


def _format_float(x: float) -> str:
    if math.isnan(x):
        return "##NaN"
    if math.isinf(x):
        return "##Inf" if x > 0 else "##-Inf"
    text = repr(x)
    if "e" in text or "E" in text or len(text.partition(".")[2]) > 10:
        text = f"{x:.10f}".rstrip("0")
        if text.endswith("."):
            text += "0"
        if text in ("-0.0",) and x != 0:
            text = "0.0"
    return text


def _escape(s: str) -> str:
    s = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    if _SURROGATE.search(s) is not None:  # lone surrogates cannot be encoded as UTF-8
        s = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04X}", s)
    return s


def _is_regex(value: Any) -> bool:
    return type(value).__name__ in ("Regex", "RegexValue") and isinstance(
        getattr(value, "source", None), str)


def set_sort_key(item: Any) -> tuple[int, Any]:
    """The order set items are shown (and stored) in: nil/booleans, numbers, strings,
    keywords, then anything else by its short rendering."""
    if isinstance(item, bool) or item is None:
        return (0, int(bool(item)) if item is not None else -1)
    if isinstance(item, float) and item != item:
        return (2, "")  # NaN: after every number, before strings
    if isinstance(item, (int, float)):
        return (1, item)  # int vs float compares exactly, huge integers included
    if isinstance(item, numbers.Real):
        return (1, float(item))
    if isinstance(item, str):
        return (3, item)
    if isinstance(item, Keyword):
        return (4, item.name)
    # the key of a collection renders it, which sorts the sets inside it by their keys:
    # past a few levels of sets in sets, those keep their order, so the work stays bounded
    if _key_depth.value >= _KEY_DEPTH:
        return (5, "")
    memo = _sorted.keys
    if memo is not None:  # within one to_clojure call, a shared item's key is made once
        found = memo.get(id(item))
        if found is not None and found[0] is item:
            return found[1]
    _key_depth.value += 1
    try:
        fmt = _Formatter(3, _KEY_CAP, max_depth=_KEY_MAX_DEPTH)
        key = (5, fmt.render(item, 40, set()))
    finally:
        _key_depth.value -= 1
    if memo is not None:
        memo[id(item)] = (item, key)
    return key


def _sorted_set(items: Any) -> list[Any]:
    """Set items in the order :func:`set_sort_key` gives. Collections whose short keys
    tie (alike in their first ~60 characters, or sets nested past the key depth) are
    ordered by a digest of their whole value: iteration order depends on the hash seed,
    and the same value must render alike in every process (a prompt cache needs it)."""
    keyed = sorted(((_set_sort_key(v), v) for v in items), key=itemgetter(0))
    out: list[Any] = []
    i, n = 0, len(keyed)
    while i < n:
        j = i + 1
        while j < n and keyed[j][0] == keyed[i][0]:
            j += 1
        tied = [v for _, v in keyed[i:j]]
        if len(tied) > 1 and keyed[i][0][0] == 5 and _sorted.digest is not _NO_DIGESTS:
            digest = _sorted.digest
            if digest is None:
                digest = value_digester(_TIE_DIGEST_BUDGET)
                if _sorted.memo is not None:  # within one to_clojure call: kept for it
                    _sorted.digest = digest
            try:
                tied.sort(key=digest)
            except DigestBudgetExceeded:  # a huge value: its ties keep iteration order
                if _sorted.memo is not None:
                    _sorted.digest = _NO_DIGESTS
        out.extend(tied)
        i = j
    return out


def _no_digests(value: Any) -> bytes:
    raise DigestBudgetExceeded


_NO_DIGESTS = _no_digests  # the budget of this to_clojure call is spent
#: Items the tie-breaking digests of one to_clojure call may visit: every set of
#: records an agent holds is ordered in full, while a sample of an adversarial value
#: (1,500 nested sets holding 1.1 million items) stays the work of the sample.
_TIE_DIGEST_BUDGET = 10_000


class _KeyDepth(threading.local):
    value = 0


_key_depth = _KeyDepth()


class _SortedSets(threading.local):
    """During one ``to_clojure`` call: (key depth, id(set)) -> (set, its sorted items)."""

    memo: dict[tuple[int, int], tuple[Any, list[Any]]] | None = None
    keys: dict[int, tuple[Any, tuple[int, str]]] | None = None  # id(item) -> its key
    digest: Callable[[Any], bytes] | None = None  # ties between keys: value digests


_sorted = _SortedSets()
_KEY_DEPTH = 1  # a key inside a key is "" (the work stays linear)
_KEY_MAX_DEPTH = 6  # levels a key shows
_KEY_CAP = 60  # characters a key shows, about (strings in it are cut at 40)


_set_sort_key = set_sort_key


class _Formatter:
    def __init__(self, limit: int | None, cap: int | None = None,
                 max_depth: int = MAX_DEPTH) -> None:
        self.limit = limit
        self.max_depth = max_depth
        self.cap = cap
        self.length = 0  # characters emitted so far (leaves and brackets)
        self.truncated = False
        self.depth = 0
        self.outer_total: int | None = None
        self.outer_shown = 0
        self.tick: Callable[[], None] | None = None
        self.rendered = 0

    def _shown(self, total: int) -> int:
        if self.limit is None or total <= self.limit:
            return total
        self.truncated = True
        if self.depth == 1 and self.outer_total is None:
            self.outer_total, self.outer_shown = total, self.limit
        return self.limit

    @staticmethod
    def _share(budget: int | None, n: int) -> int | None:
        if budget is None or n <= 1:
            return budget
        return max(_MIN_BUDGET, budget // n)

    def render(self, value: Any, budget: int | None, active: set[int]) -> str:
        if self.tick is not None:
            self.rendered += 1
            if not self.rendered & 4095:
                self.tick()
        if self.cap is not None and self.length > self.cap:
            self.truncated = True
            return "..."
        text = self._render(value, budget, active)
        self.length += 2 if isinstance(value, (list, tuple, Mapping, set, frozenset)) \
            else len(text)
        return text

    def _render(self, value: Any, budget: int | None, active: set[int]) -> str:
        if value is None:
            return "nil"
        if value is True:
            return "true"
        if value is False:
            return "false"
        if isinstance(value, str):
            if budget is not None and len(value) > budget:
                self.truncated = True
                return f'"{_escape(value[:budget])}..."'
            return f'"{_escape(value)}"'
        if isinstance(value, Keyword):
            return f":{value.name}"
        if isinstance(value, numbers.Integral):
            text = _format_int(int(value), budget)
            if not text[-1:].isdigit():
                self.truncated = True
            return text
        if isinstance(value, numbers.Real):
            return _format_float(float(value))
        if isinstance(value, Fn):
            return "#fn[" + " ".join(value.params) + "]"
        if _is_regex(value):
            return f'#"{_escape_regex(value.source)}"'
        if isinstance(value, (list, tuple, Mapping, set, frozenset)):
            if self.depth >= self.max_depth:
                self.truncated = True
                return "..."
            if id(value) in active:  # a value that contains itself
                self.truncated = True
                return "..."
            active.add(id(value))
            self.depth += 1
            try:
                return self._collection(value, budget, active)
            finally:
                self.depth -= 1
                active.discard(id(value))
        return self._object(value, budget)

    def _collection(self, value: Any, budget: int | None, active: set[int]) -> str:
        total = len(value)
        shown = self._shown(total)
        share = self._share(budget, shown)
        more = ("" if shown >= total else " ..." if shown else "...")
        if isinstance(value, Mapping):
            parts = []
            for k, v in islice(value.items(), shown):
                parts.append(f"{self._key(k, share, active)} {self.render(v, share, active)}")
            return "{" + " ".join(parts) + more + "}"
        if isinstance(value, (set, frozenset)):
            if total <= _SORTED_SET_MAX:
                memo = _sorted.memo
                at = (_key_depth.value, id(value))
                order = memo.get(at) if memo is not None else None
                if order is None or order[0] is not value:
                    order = (value, _sorted_set(value))
                    if memo is not None:  # a shared set is sorted once per to_clojure
                        memo[at] = order
                items = order[1][:shown]
            else:
                items = list(islice(value, shown))
            return "#{" + " ".join(self.render(v, share, active) for v in items) + more + "}"
        items = value[:shown] if shown < total else value
        return "[" + " ".join(self.render(v, share, active) for v in items) + more + "]"

    def _key(self, key: Any, budget: int | None, active: set[int]) -> str:
        if isinstance(key, str) and _PLAIN_KEY.match(key):
            return f":{key}"
        return self.render(key, budget, active)

    def _object(self, value: Any, budget: int | None) -> str:
        try:
            text = str(value)
        except Exception:
            text = f"<unprintable {type(value).__name__}>"
        if budget is not None and len(text) > budget:
            self.truncated = True
            text = text[:budget] + "..."
        return f"#object[{type(value).__qualname__} {_escape_quoted(text)}]"


def _format_int(x: int, budget: int | None) -> str:
    """Digits of ``x``; an integer past Python's digit limit, or longer than a sample's
    budget, shows its first digits and its size."""
    if x.bit_length() <= 13_000:  # ~3,900 digits: within Python's int -> str limit
        text = str(x)
        if budget is None or len(text) <= max(budget, 100):
            return text
        return f"{text[:budget]}...({len(text)} digits)"
    return f"#bigint[{x.bit_length()} bits]"


def _escape_regex(source: str) -> str:
    text = source.replace('"', '\\"')
    if _SURROGATE.search(text) is not None:
        text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04X}", text)
    return text


def _escape_quoted(text: str) -> str:
    return f'"{_escape(text)}"'
