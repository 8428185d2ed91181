"""What every render of one run shares: sections, templates and texts rendered once.

A :class:`RunCache` is found by :func:`run_cache_for` from the identity of a run's
tools, data, template directories and plugin registry, and kept for the last
``_MAX_RUNS`` runs. :func:`value_key` keys plain values (strings, numbers, and
lists/tuples/dicts of them) for the caches of :class:`~turnpress.core.render_context.RenderContext`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from turnpress.core.model import Tool
from turnpress.core.registry import Registry

__all__ = ["MAX_TEXTS", "NotPlain", "RunCache", "run_cache_for", "value_key"]


class RunCache:
    """What every render of one run shares, rendered once and reused.

    A run is fixed by its tools, its data, the template directories and the
    plugin registry; sections that depend on nothing else (the namespace sections
    ordered before ``user/``: ``tool/``, ``data/``, NS-012), the loaded templates,
    and template texts whose variables are plain strings and numbers (or lists and
    dicts of them) are kept here. Found by :func:`run_cache_for` from the identity
    of those objects and of every tool and data value, so replacing a value starts
    a new cache; changing a value in place (appending to a list inside ``data``) is
    not seen: pass new data instead.
    """

    __slots__ = ("clojure", "counters", "data", "keep", "lock", "per_turn", "sections",
                 "templates", "text_chars", "texts", "tools")

    def __init__(self, keep: tuple[Any, ...]) -> None:
        self.keep = keep  # strong references: the ids in the lookup key stay unique
        self.sections: dict[tuple[Any, ...], tuple[Any, str]] = {}
        # template name -> (the environment it was loaded from, the template)
        self.templates: dict[str, tuple[Any, Any]] = {}
        # key -> (text, the characters the entry counts for); least recently used first
        self.texts: OrderedDict[tuple[Any, ...], tuple[str, int]] = OrderedDict()
        self.tools: dict[str, Tool] | None = None  # the coerced tools (render())
        self.data: dict[str, Any] | None = None
        # (value key, limit, printable_limit) -> its to_clojure text (tool-call arguments)
        self.clojure: dict[tuple[Any, ...], str] = {}
        # (id(turn), key) -> (the turn, kept alive so its id stays unique; the value);
        # also (id(memory), section key) -> (memory, (renderer, its user/ section text))
        self.per_turn: dict[tuple[int, Any], tuple[Any, Any]] = {}
        self.lock = threading.Lock()
        self.text_chars = 0
        # tokenizer name -> the run's TokenCounter (RenderContext.token_counter)
        self.counters: dict[str, Any] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        """Copied or pickled (a strategy that remembers its last prompt holds its run's
        cache), a cache is a new empty one, of no run: it is only ever a shortcut, found
        again by :func:`run_cache_for`, and it holds a lock and the plugin registry."""
        return (RunCache, ((),))

    def text(self, key: tuple[Any, ...]) -> str | None:
        """The remembered text of a template call, or None (a hit becomes the newest)."""
        with self.lock:
            entry = self.texts.get(key)
            if entry is None:
                return None
            self.texts.move_to_end(key)
            return entry[0]

    def remember(self, key: tuple[Any, ...], text: str, key_chars: int = 0) -> None:
        """Keep a template's text (``key_chars``: the size of the key's strings), the
        most recently used ``MAX_TEXTS`` within ``_MAX_TEXT_CHARS``."""
        size = key_chars + len(text)
        if size > _MAX_TEXT_CHARS // 4:
            return
        with self.lock:
            if key in self.texts:
                return
            self.texts[key] = (text, size)
            self.text_chars += size
            while len(self.texts) > MAX_TEXTS or self.text_chars > _MAX_TEXT_CHARS:
                _old_key, (_old_text, old_size) = self.texts.popitem(last=False)
                self.text_chars -= old_size


_RUNS: OrderedDict[tuple[Any, ...], RunCache] = OrderedDict()
_RUNS_LOCK = threading.Lock()
_MAX_RUNS = 8
MAX_TEXTS = 8192
_MAX_TEXT_CHARS = 1_000_000  # per run: what the text cache may hold (texts and keys)


def _items(mapping: Mapping[str, Any] | None) -> tuple[tuple[Any, Any], ...]:
    return () if mapping is None else tuple(mapping.items())


def _same_items(a: tuple[tuple[Any, Any], ...], b: tuple[tuple[Any, Any], ...]) -> bool:
    return len(a) == len(b) and all(
        x[1] is y[1] and x[0] == y[0] for x, y in zip(a, b, strict=True))


def run_cache_for(tools: Mapping[str, Any] | None, data: Mapping[str, Any] | None,
                  template_dirs: tuple[Path, ...], registry: Registry) -> RunCache:
    """The :class:`RunCache` of the run with these tools, data, templates and plugins."""
    key = (id(tools), id(data), tuple(template_dirs), id(registry))
    tool_items, data_items = _items(tools), _items(data)
    with _RUNS_LOCK:
        entry = _RUNS.get(key)
        if entry is not None:
            kept_tools, kept_data, kept_registry, kept_tool_items, kept_data_items = entry.keep
            if (kept_tools is tools and kept_data is data and kept_registry is registry
                    and _same_items(kept_tool_items, tool_items)
                    and _same_items(kept_data_items, data_items)):
                _RUNS.move_to_end(key)
                return entry
        entry = RunCache((tools, data, registry, tool_items, data_items))
        _RUNS[key] = entry
        _RUNS.move_to_end(key)
        while len(_RUNS) > _MAX_RUNS:
            _RUNS.popitem(last=False)
        return entry


_MAX_KEY_DEPTH = 4


class NotPlain(Exception):
    """A template variable that the text cache cannot key (an object, a deep value)."""


def value_key(value: Any, depth: int = 0) -> Any:
    """A hashable key equal only for values a template renders the same way.

    Strings, ints and None stand for themselves (none of them equals a value of
    another of these types, nor a tuple); booleans and floats are tagged (``True``
    equals ``1``; floats by their repr: ``-0.0`` is not ``0.0``); lists, tuples and
    dicts are tagged with their type, holding their items' keys. Raises
    ``NotPlain`` for anything else, or nesting deeper than ``_MAX_KEY_DEPTH``.
    """
    kind = type(value)
    if kind is str or kind is int or value is None:
        return value
    if kind is bool:
        return (bool, value)
    if kind is float:
        return (float, repr(value))
    if depth >= _MAX_KEY_DEPTH:
        raise NotPlain
    if kind is list or kind is tuple:
        if all(type(x) is str for x in value):  # the common case, in C
            return (kind, tuple(value))
        return (kind, tuple([value_key(x, depth + 1) for x in value]))
    if kind is dict:
        items = tuple(value.items())
        if all(type(k) is str and (type(v) is str or type(v) is int) for k, v in items):
            return (dict, items)  # what the general case gives, without the calls
        return (dict, tuple([(value_key(k, depth + 1), value_key(v, depth + 1))
                             for k, v in items]))
    raise NotPlain
