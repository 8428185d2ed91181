"""Render turns into messages: the Strategy contract, ``normalize`` and ``render``.

The core knows no particular strategy: strategies come from the
``register_strategies`` hook. What it offers every strategy is a
:class:`RenderContext` with the shared pieces (templates, namespace sections, tool
calls, output, failed attempts, the turns-left line), so a plugin strategy
reuses the built-in formats instead of copying them.
"""

from __future__ import annotations

import inspect
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

from turnpress.core.breakpoints import check_breakpoints
from turnpress.core.clojure import to_clojure
from turnpress.core.model import MESSAGE_ROLES, Fn, Memory, Message, Tool, Turn, coerce_tools
from turnpress.core.registry import PluginError, Registry, get_registry
from turnpress.core.templates import get_environment, resolve_template_dirs

_T = TypeVar("_T")

__all__ = [
    "BASELINE_STRATEGY",
    "DEFAULT_STRATEGY",
    "Breakpoint",
    "Compression",
    "NamespaceView",
    "RenderContext",
    "RunCache",
    "RunState",
    "Strategy",
    "StrategyNotApplicable",
    "check_messages",
    "get_strategy",
    "normalize",
    "parse_strategy_spec",
    "prompt_arguments",
    "render",
    "render_with_breakpoints",
    "strategy_names",
]

DEFAULT_STRATEGY = "single-user-coalesced"
BASELINE_STRATEGY = "full-history"

# Namespace sections ordered before user/ must not depend on memory: together with
# the mission they form the stable, cacheable head of the prompt (NS-012).
USER_NAMESPACE_ORDER = 300

SAMPLE_LIMIT = 3
SAMPLE_PRINTABLE_LIMIT = 80
ARG_LIMIT = 3
ARG_PRINTABLE_LIMIT = 60


Breakpoint = tuple[int, "int | None"]


class StrategyNotApplicable(ValueError):
    """A strategy cannot render this kind of history; the message says why in one line.

    Raised from ``to_messages`` (e.g. a PTC-Lisp-only strategy given an imported
    tool-calling transcript). ``turnpress compare`` shows such a strategy as ``n/a``
    with the message; ``Compressor`` raises it when it is created.
    """


class Strategy:
    """Base class for history strategies (optional: any class with the same shape works).

    A strategy has a ``name``, takes its options as keyword-only constructor
    arguments with defaults, stores each under the same attribute name, and turns
    the history into messages in :meth:`to_messages`. It must be pure: the same
    turns, memory and context always give the same messages. It may hand out the
    same message dicts again in later prompts (see :meth:`RenderContext.per_turn`),
    but never changes a message after returning it.
    """

    name: ClassVar[str] = ""

    def to_messages(
        self, turns: Sequence[Turn], memory: Mapping[str, Any], ctx: RenderContext
    ) -> list[Message]:
        """Render ``turns`` (oldest first) into the messages of the next LLM call."""
        raise NotImplementedError

    def cache_breakpoints(
        self, turns: Sequence[Turn], memory: Mapping[str, Any], ctx: RenderContext
    ) -> list[Breakpoint]:
        """Where this strategy's prompt has a prefix that later prompts repeat byte for byte.

        Each breakpoint ``(message_index, offset)`` says: the messages before
        ``message_index`` and the first ``offset`` characters of that message's
        content (``None``: all of it) stay the same on the next turns. Provider
        shapes put their cache markers there (Anthropic ``cache_control``).
        The default is the end of the system message.

        One exception: a breakpoint at the very end of the prompt may be a
        read-only marker (a client's last ``cache_control`` reads what the previous
        prompt wrote), so a strategy whose boundary moves next turn may still mark
        its end; every other breakpoint must be repeated by the following prompts.
        """
        return [(0, None)]

    @classmethod
    def option_defaults(cls) -> dict[str, Any]:
        """The options this strategy takes, with their defaults."""
        return option_defaults(cls)

    @property
    def options(self) -> dict[str, Any]:
        """The options of this instance."""
        return {k: getattr(self, k) for k in option_defaults(type(self))}

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options.items())
        return f"{type(self).__name__}({opts})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.options == other.options  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), tuple(sorted(self.options.items(), key=lambda kv: kv[0]))))

    # -- option checks for subclasses ---------------------------------------------

    def check_int(self, option: str, value: Any, minimum: int = 0,
                  maximum: int | None = None) -> int:
        """Return ``value`` if it is an int in range, else raise a ``ValueError`` saying so."""
        in_range = isinstance(value, int) and not isinstance(value, bool) and value >= minimum
        if in_range and maximum is not None:
            in_range = value <= maximum
        if not in_range:
            bound = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
            raise ValueError(f"strategy {self.name!r}: option {option!r} must be an integer "
                             f"{bound}, got {value!r}")
        return value

    def check_choice(self, option: str, value: Any, choices: Sequence[Any]) -> Any:
        """Return ``value`` if it is one of ``choices``, else raise a ``ValueError``."""
        if value not in choices:
            valid = ", ".join(repr(c) for c in choices)
            raise ValueError(f"strategy {self.name!r}: option {option!r} must be one of "
                             f"{valid}, got {value!r}")
        return value


def option_defaults(cls: type) -> dict[str, Any]:
    """The keyword-only constructor arguments of a strategy class, with defaults.

    Read once per class (``inspect.signature`` is slow), then served from a cache.
    """
    return dict(_option_defaults(cls))


@lru_cache(maxsize=256)
def _option_defaults(cls: type) -> dict[str, Any]:
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):
        return {}
    return {
        p.name: p.default
        for p in sig.parameters.values()
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is not p.empty
    }


Compression = (bool | str | type[Strategy] | Strategy
               | tuple[str | type[Strategy], Mapping[str, Any]] | None)
"""What ``compression=`` accepts (``render``, ``Agent``, ``get_strategy``, ``normalize``):
``True`` (the default strategy, ``single-user-coalesced``; the default everywhere),
``False``/``None`` (the ``full-history`` baseline), a strategy name or spec string
(``"rolling-window:window=3"``), a Strategy class, a Strategy instance, or
``(name_or_class, {options})``."""


@dataclass(frozen=True)
class NamespaceView:
    """What a namespace renderer is given.

    ``memory`` holds the agent's own definitions; ``show_samples`` is false once
    the agent printed (samples OR println, never both); ``minimal`` asks for names
    and types only (no samples, no docstrings).
    """

    ctx: RenderContext
    memory: Mapping[str, Any]
    show_samples: bool = True
    minimal: bool = False


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

    __slots__ = ("clojure", "data", "keep", "lock", "per_turn", "sections", "templates",
                 "text_chars", "texts", "tools")

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
        most recently used ``_MAX_TEXTS`` within ``_MAX_TEXT_CHARS``."""
        size = key_chars + len(text)
        if size > _MAX_TEXT_CHARS // 4:
            return
        with self.lock:
            if key in self.texts:
                return
            self.texts[key] = (text, size)
            self.text_chars += size
            while len(self.texts) > _MAX_TEXTS or self.text_chars > _MAX_TEXT_CHARS:
                _old_key, (_old_text, old_size) = self.texts.popitem(last=False)
                self.text_chars -= old_size


_RUNS: OrderedDict[tuple[Any, ...], RunCache] = OrderedDict()
_RUNS_LOCK = threading.Lock()
_MAX_RUNS = 8
_MAX_TEXTS = 8192
_MAX_TEXT_CHARS = 1_000_000  # per run: what the text cache may hold (texts and keys)
_MAX_PER_TURN = 100_000  # per run: values remembered by RenderContext.per_turn
_CALL_ENTRIES = ("turnpress.tool_calls", ARG_LIMIT, ARG_PRINTABLE_LIMIT)  # its per_turn key
# A template whose texts were looked up _TEXT_PROBE times and found less than once in
# _TEXT_HIT_RATIO times (a "last K" window shifting on every prompt) is rendered
# without the text cache (keying its variables costs more than rendering them) for
# its next _TEXT_PAUSE calls, then probed again. Template name -> [lookups, hits,
# calls left without the cache]; shared by all runs (how a template is used).
_TEXT_PROBE = 64
_TEXT_HIT_RATIO = 4
_TEXT_PAUSE = 4096
_TEXT_STATS: dict[str, list[int]] = {}


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


class _NotPlain(Exception):
    """A template variable that the text cache cannot key (an object, a deep value)."""


def _value_key(value: Any, depth: int = 0) -> Any:
    """A hashable key equal only for values a template renders the same way.

    Strings, ints and None stand for themselves (none of them equals a value of
    another of these types, nor a tuple); booleans and floats are tagged (``True``
    equals ``1``; floats by their repr: ``-0.0`` is not ``0.0``); lists, tuples and
    dicts are tagged with their type, holding their items' keys. Raises
    ``_NotPlain`` for anything else, or nesting deeper than ``_MAX_KEY_DEPTH``.
    """
    kind = type(value)
    if kind is str or kind is int or value is None:
        return value
    if kind is bool:
        return (bool, value)
    if kind is float:
        return (float, repr(value))
    if depth >= _MAX_KEY_DEPTH:
        raise _NotPlain
    if kind is list or kind is tuple:
        if all(type(x) is str for x in value):  # the common case, in C
            return (kind, tuple(value))
        return (kind, tuple([_value_key(x, depth + 1) for x in value]))
    if kind is dict:
        items = tuple(value.items())
        if all(type(k) is str and (type(v) is str or type(v) is int) for k, v in items):
            return (dict, items)  # what the general case gives, without the calls
        return (dict, tuple([(_value_key(k, depth + 1), _value_key(v, depth + 1))
                             for k, v in items]))
    raise _NotPlain


def _text_key(name: str, variables: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """A cache key for a template call whose variables are plain values (strings,
    numbers, booleans, None, and lists/tuples/dicts of them); None when a variable
    is anything else."""
    parts: list[Any] = [name]
    for k, v in variables.items():
        kind = type(v)
        if kind is str or kind is int or v is None:  # as _value_key gives them
            parts.append((k, v))
            continue
        try:
            parts.append((k, _value_key(v)))
        except _NotPlain:
            return None
    return tuple(parts)


def _key_chars(key: Any) -> int:
    """The characters of the strings in a key (what remembering it costs)."""
    if type(key) is str:
        return len(key)
    if type(key) is not tuple:
        return 0
    total = 0
    pending = [key]
    while pending:
        for x in pending.pop():
            kind = type(x)
            if kind is str:
                total += len(x)
            elif kind is tuple:
                pending.append(x)
    return total


@dataclass(frozen=True)
class RenderContext:
    """Everything a strategy needs besides the turns, and the shared building blocks."""

    mission: str
    system_prompt: str
    tools: Mapping[str, Tool]
    data: Mapping[str, Any]
    turns_left: int
    template_dirs: tuple[Path, ...] = ()
    registry: Registry = field(default_factory=get_registry, repr=False, compare=False)
    #: an imported transcript's original messages before its first turn (empty for a
    #: PTC-Lisp run); its turns carry their own original ``Turn.messages``
    preamble: tuple[Message, ...] = ()
    #: what the renders of this run share (see :class:`RunCache`); found from
    #: ``tools``, ``data``, ``template_dirs`` and ``registry`` when not given
    run_cache: RunCache | None = field(default=None, repr=False, compare=False)
    #: False when the caller did not say how many turns are left (``compress()`` or
    #: ``Compressor.messages()`` without ``turns_left``): ``turns_left`` is then 0 and
    #: :meth:`turns_left_line` gives ``""``, so no strategy prints a made-up count
    turns_left_known: bool = True

    def __post_init__(self) -> None:
        if self.run_cache is None:
            object.__setattr__(self, "run_cache", run_cache_for(
                self.tools, self.data, tuple(self.template_dirs), self.registry))

    @property
    def is_transcript(self) -> bool:
        """Whether the history is an imported tool-calling transcript (DESIGN §10),
        not a PTC-Lisp run: it has original messages to replay."""
        return bool(self.preamble)

    # -- values ---------------------------------------------------------------------

    def type_label(self, value: Any) -> str:
        """The type label of ``value`` (``list[3]``, ``string``, a plugin's label...)."""
        return self.registry.type_label(value)

    def to_clojure(self, value: Any, limit: int | None = None,
                   printable_limit: int | None = None) -> str:
        """``to_clojure(...)``'s text (a plain value's is remembered for the run: a
        string, or a list, tuple or dict of plain values, such as tool-call arguments)."""
        kind = type(value)
        if kind is str:
            key: tuple[Any, ...] = (value, limit, printable_limit)
        elif kind is dict or kind is list or kind is tuple:
            try:
                key = (_value_key(value), limit, printable_limit)
            except _NotPlain:
                return to_clojure(value, limit, printable_limit)[0]
        else:
            return to_clojure(value, limit, printable_limit)[0]
        cache: RunCache = self.run_cache  # type: ignore[assignment]
        text = cache.clojure.get(key)
        if text is None:
            text = to_clojure(value, limit, printable_limit)[0]
            if len(cache.clojure) >= _MAX_TEXTS:
                cache.clojure.clear()
            cache.clojure[key] = text
        return text

    def sample(self, value: Any) -> str | None:
        """A value's sample (limit 3, 80 characters), or None for nil and empty collections."""
        if value is None:
            return None
        try:
            if len(value) == 0 and not isinstance(value, str):
                return None
        except TypeError:
            pass
        return to_clojure(value, SAMPLE_LIMIT, SAMPLE_PRINTABLE_LIMIT)[0]

    def call_args(self, args: Iterable[Any]) -> str:
        """A tool call's arguments, each with limit 3 / 60 characters, space separated."""
        return " ".join([self.to_clojure(a, ARG_LIMIT, ARG_PRINTABLE_LIMIT) for a in args])

    # -- templates ------------------------------------------------------------------

    def template(self, name: str, /, **variables: Any) -> str:
        """Render template ``name`` with ``variables`` (trailing newlines removed).

        Templates are pure: when every variable is a plain string, number, boolean,
        None, or a list, tuple or dict of those, the text is remembered for the rest
        of the run (the most recently used texts, within a size bound). A template
        whose texts are seldom asked for again (a shifting "last K" window) is
        rendered without that cache for a while; its text is the same either way.
        """
        cache: RunCache = self.run_cache  # type: ignore[assignment]
        key = None
        stats = _TEXT_STATS.get(name)
        if stats is None:
            stats = _TEXT_STATS[name] = [0, 0, 0]
        if stats[2] > 0:  # racy under threads: only how often texts are kept changes
            stats[2] -= 1
        else:
            key = _text_key(name, variables)
            if key is not None:
                stats[0] += 1
                text = cache.text(key)
                if text is not None:
                    stats[1] += 1
                    return text
                if stats[0] >= _TEXT_PROBE:
                    if stats[1] * _TEXT_HIT_RATIO < stats[0]:
                        stats[2] = _TEXT_PAUSE
                    stats[0] = stats[1] = 0
        env = get_environment(self.template_dirs)
        loaded = cache.templates.get(name)
        if loaded is None or loaded[0] is not env:
            loaded = cache.templates[name] = (env, env.get_template(name))
        text = loaded[1].render(**variables).rstrip("\n")
        if key is not None:
            cache.remember(key, text, _key_chars(key))
        return text

    def per_turn(self, turn: Turn, key: Any, make: Callable[[], _T]) -> _T:
        """``make()``, computed once per run for this ``turn`` and ``key``, then reused.

        For a strategy's rendering of one turn (its recap line, its masked output...)
        that every later prompt repeats: compare renders prompt 1, 2, 3... of a run,
        and without this each prompt redoes the work of all turns before it. ``key``
        must hold everything else the value depends on (the strategy's name and
        options, the turn's age tier...); turns are immutable, so the turn itself
        needs no key. The most recent :data:`_MAX_PER_TURN` values are kept per run.

            line = ctx.per_turn(turn, ("my-strategy", self.limit),
                                lambda: self.recap_line(turn, ctx))
        """
        cache: RunCache = self.run_cache  # type: ignore[assignment]
        slot = (id(turn), key)
        found = cache.per_turn.get(slot)
        if found is not None and found[0] is turn:
            return found[1]  # type: ignore[no-any-return]
        value = make()
        if len(cache.per_turn) >= _MAX_PER_TURN:
            cache.per_turn.clear()
        cache.per_turn[slot] = (turn, value)
        return value

    def message(self, role: str, content: str) -> Message:
        """A message dict."""
        return {"role": role, "content": content}  # type: ignore[typeddict-item]

    # -- shared sections --------------------------------------------------------------

    def namespaces(self, memory: Mapping[str, Any], *, show_samples: bool = True,
                   minimal: bool = False, only: Iterable[str] | None = None,
                   stable: bool | None = None) -> list[str]:
        """The namespace sections (``tool/``, ``data/``, ``user/``, plugin ones), non-empty.

        ``only`` restricts to the named sections (``["tool/", "data/"]``);
        ``stable=True`` keeps the sections ordered before ``user/`` (which must not
        depend on memory), ``stable=False`` the others. The stable sections are
        rendered once per run (:class:`RunCache`) and reused.
        """
        view = NamespaceView(self, memory, show_samples, minimal)
        wanted = None if only is None else set(only)
        sections = []
        cache: RunCache = self.run_cache  # type: ignore[assignment]
        for reg in self.registry.namespace_renderers():
            if wanted is not None and reg.name not in wanted:
                continue
            is_stable = reg.order < USER_NAMESPACE_ORDER
            if stable is not None and is_stable != stable:
                continue
            key = (id(reg), show_samples, minimal)
            if is_stable:
                hit = cache.sections.get(key)
                if hit is not None and hit[0] is reg:
                    if hit[1]:
                        sections.append(hit[1])
                    continue
            elif type(memory) is Memory:  # a turn's memory never changes: render it once
                hit = cache.per_turn.get((id(memory), key))
                if hit is not None and hit[0] is memory and hit[1][0] is reg:
                    if hit[1][1]:
                        sections.append(hit[1][1])
                    continue
            try:
                text = reg.value(view)
            except Exception as exc:
                raise PluginError(
                    f"namespace renderer {reg.name!r} of {reg.plugin.source} failed: "
                    f"{type(exc).__name__}: {exc}", plugin=reg.plugin.name,
                    distribution=reg.plugin.distribution,
                    entry_point=reg.plugin.entry_point) from exc
            text = text.rstrip("\n") if text else ""
            if is_stable:
                cache.sections[key] = (reg, text)
            elif type(memory) is Memory:
                if len(cache.per_turn) >= _MAX_PER_TURN:
                    cache.per_turn.clear()
                cache.per_turn[(id(memory), key)] = (memory, (reg, text))
            if text:
                sections.append(text)
        return sections

    def tool_calls(self, turns: Sequence[Turn], limit: int) -> str | None:
        """The ``;; Tool calls made:`` section over all turns (failed ones too), or None
        before any turn ran."""
        if not turns:
            return None
        calls = newest_items((self.per_turn(t, _CALL_ENTRIES, partial(self._call_entries, t))
                              for t in reversed(turns)), limit)
        return self.template("history/tool_calls.j2", calls=calls)

    def _call_entries(self, turn: Turn) -> tuple[dict[str, str], ...]:
        """One turn's ``{name, args}`` entries of :meth:`tool_calls` (made once per run)."""
        return tuple({"name": call.name, "args": self.call_args(call.args)}
                     for call in turn.tool_calls)

    def output(self, turns: Sequence[Turn], limit: int, *,
               max_chars: int | None = None) -> str | None:
        """The ``;; Output:`` section: the last ``limit`` println calls of successful turns.

        With ``max_chars``, an entry longer than that is cut so that it ends in ``...``
        and is ``max_chars`` characters long, ``...`` included (``max_chars >= 3``).
        """
        if not has_printed(turns):
            return None
        prints = newest_items((t.prints for t in reversed(turns) if t.success), limit)
        return self.template("history/output.j2", prints=prints, max_chars=max_chars)

    def failed_attempt(self, turn: Turn, *, max_lines: int | None = None) -> str:
        """The ``Your previous attempt`` block for a failed turn.

        With ``max_lines``, a longer program shows its first ``max_lines`` lines and a
        comment line saying how many more it had.
        """
        lines = turn.program.split("\n")
        more_lines = 0
        program = turn.program
        if max_lines is not None and len(lines) > max_lines:
            more_lines = len(lines) - max_lines
            program = "\n".join(lines[:max_lines])
        return self.template("history/failed_attempt.j2", program=program,
                             message=error_message(turn), more_lines=more_lines)

    def turns_left_line(self, turns_left: int) -> str:
        """``Turns left: N``, or the final-turn warning when N == 1; ``""`` when the
        turns left are not known (``turns_left_known`` is False)."""
        if not self.turns_left_known:
            return ""
        return self.template("history/turns_left.j2", turns_left=turns_left)

    def feedback(self, turn: Turn, turns_left: int) -> str:
        """What full history shows after a turn: its output, result or error, then
        the turns-left line for that point."""
        return self.template(
            "history/feedback.j2",
            success=turn.success,
            prints=list(turn.prints),
            result=None if not turn.success else self.to_clojure(
                turn.result, SAMPLE_LIMIT, SAMPLE_PRINTABLE_LIMIT),
            message=error_message(turn) if not turn.success else None,
            turns_left=self.turns_left_line(turns_left),
        )

    def turns_left_after(self, turns: Sequence[Turn], position: int) -> int:
        """Turns left after the ``position``-th turn (1-based) of ``turns``."""
        return self.turns_left + len(turns) - position


def has_printed(turns: Iterable[Turn]) -> bool:
    """Whether any successful turn printed (then samples give way to output)."""
    return any(t.prints for t in turns if t.success)


def defined_names(memory: Mapping[str, Any],
                  previous: Mapping[str, Any] | None = None) -> list[str]:
    """The names ``memory`` defines that ``previous`` lacked or held differently.

    This is what one turn defined: ``defined_names(turn.memory, previous_turn.memory)``,
    in memory order. A value counts when its type, value or docstring changed; a
    function when anything but its return type changed (calling a function records
    its return type, it does not redefine it).
    """
    previous = previous or {}
    docs = getattr(memory, "docs", None) or {}
    previous_docs = getattr(previous, "docs", None) or {}
    return [
        name for name, value in memory.items()
        if name not in previous or not _same_definition(value, previous[name])
        or docs.get(name) != previous_docs.get(name)
    ]


def _same_definition(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        if isinstance(a, Fn) and is_dataclass(a):
            return all(bool(getattr(a, f.name) == getattr(b, f.name))
                       for f in fields(a) if f.name != "return_type")
        return bool(a == b)
    except Exception:  # values that refuse comparison count as redefined
        return False


def printed_lines(turn: Turn) -> int:
    """How many lines a turn printed (a println call of n lines counts n)."""
    return sum(text.count("\n") + 1 for text in turn.prints)


def error_message(turn: Turn) -> str:
    """The message of a failed turn's :class:`Failure`."""
    error = turn.result
    return getattr(error, "message", None) or str(error)


def last_items(groups: Iterable[Sequence[Any]], limit: int) -> list[Any]:
    """The last ``limit`` items of the concatenated ``groups``, oldest first."""
    return newest_items(reversed(list(groups)), limit)


def newest_items(groups_newest_first: Iterable[Sequence[Any]], limit: int) -> list[Any]:
    """:func:`last_items` given the groups newest first (``reversed(turns)``): it stops
    once it has ``limit`` items, so the cost depends on ``limit``, not on the history."""
    if limit <= 0:
        return []
    picked: list[Any] = []
    for group in groups_newest_first:
        need = limit - len(picked)
        picked.extend(reversed(group[-need:]))
        if len(picked) >= limit:
            break
    picked.reverse()
    return picked


# -- strategy lookup ---------------------------------------------------------------------


def strategy_names(registry: Registry | None = None) -> list[str]:
    """The names of all registered strategies, sorted."""
    return sorted((registry or get_registry()).strategies())


def _is_strategy_class(x: Any) -> bool:
    return isinstance(x, type) and isinstance(getattr(x, "name", None), str) and callable(
        getattr(x, "to_messages", None))


def _lookup(name: str, registry: Registry) -> type:
    strategies = registry.strategies()
    if name in strategies:
        return strategies[name].value
    valid = ", ".join(sorted(strategies)) or "(none)"
    raise ValueError(f"unknown strategy {name!r}; registered strategies: {valid}."
                     + registry.failure_note())


def parse_strategy_spec(spec: str) -> tuple[str, dict[str, str]]:
    """Split ``"NAME:k=v,k2=v2"`` into ``("NAME", {"k": "v", "k2": "v2"})`` (values as text)."""
    name, _, rest = spec.partition(":")
    name = name.strip()
    if not name:
        raise ValueError(f"strategy spec {spec!r} has no strategy name; "
                         f"use NAME or NAME:option=value,...")
    options: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"strategy spec {spec!r}: {item!r} is not option=value")
        if key.strip() in options:
            raise ValueError(f"strategy spec {spec!r} gives option {key.strip()!r} twice; "
                             f"give each option once")
        options[key.strip()] = value.strip()
    return name, options


def _coerce_option(strategy: str, option: str, text: str, default: Any) -> Any:
    """Turn an option's text into the type of its default (for CLI-style specs)."""
    try:
        if isinstance(default, bool):
            lowered = text.lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if isinstance(default, int):
            return int(text)
        if isinstance(default, float):
            return float(text)
    except ValueError:
        kind = {bool: "a boolean (true or false)", int: "an integer",
                float: "a number"}.get(type(default), f"a {type(default).__name__}")
        raise ValueError(f"strategy {strategy!r}: option {option!r} expects {kind}, "
                         f"got {text!r}") from None
    return text


def _resolve(compression: Compression, registry: Registry) -> tuple[type, dict[str, Any]]:
    """``(strategy class, validated options as given)`` for a ``compression=`` value."""
    if compression is None or compression is False:
        compression = BASELINE_STRATEGY
    elif compression is True:
        compression = DEFAULT_STRATEGY
    if isinstance(compression, tuple):
        if len(compression) != 2 or not isinstance(compression[1], Mapping):
            raise ValueError(f"compression tuple must be (name_or_class, {{options}}), "
                             f"got {compression!r}")
        cls, options = _resolve(compression[0], registry)
        return cls, _validated(cls, {**options, **compression[1]})
    if isinstance(compression, str):
        name, text_options = parse_strategy_spec(compression)
        cls = _lookup(name, registry)
        return cls, _validated(cls, text_options, from_text=True)
    if _is_strategy_class(compression):
        return compression, {}
    if _is_strategy_class(type(compression)):
        return type(compression), dict(getattr(compression, "options", {}))
    valid = ", ".join(strategy_names(registry))
    raise ValueError(
        f"compression={compression!r} is not understood; use True, False, None, a strategy "
        f"name ({valid}), a Strategy class, or (name_or_class, {{options}})"
    )


def _validated(cls: type, options: Mapping[str, Any], *, from_text: bool = False
               ) -> dict[str, Any]:
    defaults = option_defaults(cls)
    unknown = [k for k in options if k not in defaults]
    if unknown:
        valid = ", ".join(defaults) or "(none)"
        raise ValueError(f"strategy {cls.name!r} has no option {unknown[0]!r}; "
                         f"valid options: {valid}")
    if from_text:
        return {k: _coerce_option(cls.name, k, v, defaults[k]) for k, v in options.items()}
    return dict(options)


def _instantiate(cls: type, options: Mapping[str, Any]) -> Any:
    try:
        return cls(**options)
    except TypeError as exc:
        raise ValueError(f"strategy {cls.name!r}: {exc}") from None


_RESOLVED: dict[tuple[Any, ...], tuple[Any, type, dict[str, Any]]] = {}
_RESOLVED_LOCK = threading.Lock()


def get_strategy(compression: Compression = True, /, registry: Registry | None = None,
                 **options: Any) -> Any:
    """The strategy instance that ``render(..., compression=compression)`` uses.

    Accepts everything :func:`normalize` accepts, plus a ready instance; extra
    keyword arguments are options. ``False``/``None`` give the ``full-history``
    baseline. Bad names and options raise ``ValueError``. A name, spec string or
    ``True``/``False``/``None`` is looked up, parsed and validated once per set of
    registered strategies; later calls only build a new instance from the result.
    """
    registry = registry or get_registry()
    if not options and _is_strategy_class(type(compression)):
        return compression
    cacheable = not options and (compression is None or isinstance(compression, (bool, str)))
    if cacheable:
        key = (type(compression), compression, id(registry))
        strategies = registry.strategies()
        hit = _RESOLVED.get(key)
        if hit is not None and hit[0] is strategies:
            return _instantiate(hit[1], hit[2])
    cls, given = _resolve(compression, registry)
    valid = _validated(cls, {**given, **options})
    instance = _instantiate(cls, valid)
    if cacheable:
        with _RESOLVED_LOCK:
            if len(_RESOLVED) > 256:
                _RESOLVED.clear()
            _RESOLVED[key] = (strategies, cls, valid)
    return instance


def normalize(compression: Compression) -> tuple[str | None, dict[str, Any]]:
    """Normalize a ``compression=`` value to ``(strategy_name | None, options)``.

    ``True`` -> ``("single-user-coalesced", {})``; ``False``/``None`` -> ``(None, {})``;
    a registered name (or ``"name:k=v,..."``), a Strategy class, an instance, or
    ``(name_or_class, {options})``. Anything else, an unknown name or an unknown
    option raises ``ValueError`` naming the bad value and the valid ones.
    """
    if compression is None or compression is False:
        return None, {}
    cls, options = _resolve(compression, get_registry())
    _instantiate(cls, options)  # option values are checked by the constructor
    return cls.name, options


class RunLike(Protocol):
    """What :func:`prompt_arguments` reads from a run: a :class:`~turnpress.core.trace.Trace`,
    a :class:`RunState`, or anything with these attributes (``preamble`` and ``name``
    are optional)."""

    mission: str
    system_prompt: str
    max_turns: int
    tools: Mapping[str, Any]
    data: Mapping[str, Any]
    turns: Sequence[Turn]


@dataclass(frozen=True)
class RunState:
    """A run in progress, as the render path needs it (the agent loop's view of a
    :class:`~turnpress.core.trace.Trace`). Nothing is copied, so the tools and data
    keep their identity from turn to turn and their sections are rendered once."""

    mission: str
    system_prompt: str
    max_turns: int
    tools: Mapping[str, Any]
    data: Mapping[str, Any]
    turns: tuple[Turn, ...] = ()
    preamble: tuple[Mapping[str, Any], ...] = ()
    name: str = ""


def prompt_arguments(run: RunLike, n: int) -> dict[str, Any]:
    """The arguments of :func:`render` (all but ``compression`` and ``template_dirs``)
    for the prompt of turn ``n`` (1-based) of ``run``.

    This is the one place that says what "the prompt of turn n" is: the turns before
    it (``turns[:n-1]``) and ``turns_left = max_turns - (n - 1)`` (ARC-006: counted
    from turns, never from messages). ``n`` goes from 1 to ``len(turns) + 1``; the
    last one is the next prompt, the one a live agent sends next (turn 1 of a run
    with no turns). ``render``, ``trace show``, ``compare`` and the agent loop all
    come through here. Anything else raises ``ValueError`` naming the run and the
    valid range.
    """
    turns = tuple(run.turns)
    count = len(turns)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= count + 1:
        name = getattr(run, "name", "") or "(unnamed)"
        raise ValueError(f"trace {name} has {count} turn{'' if count == 1 else 's'}; "
                         f"turn must be from 1 to {count + 1} ({count + 1} is the next "
                         f"prompt), got {n!r}")
    return {"turns": turns[: n - 1], "mission": run.mission,
            "system_prompt": run.system_prompt, "tools": run.tools, "data": run.data,
            "turns_left": run.max_turns - (n - 1),
            "preamble": tuple(getattr(run, "preamble", ()))}


def _prepare(
    turns: Iterable[Turn],
    memory: Mapping[str, Any] | None,
    *,
    mission: str,
    system_prompt: str,
    tools: Mapping[str, Any] | None,
    data: Mapping[str, Any] | None,
    turns_left: int | None,
    compression: Compression,
    template_dirs: Iterable[str | os.PathLike[str]],
    preamble: Iterable[Mapping[str, Any]] = (),
) -> tuple[Any, tuple[Turn, ...], Mapping[str, Any], RenderContext]:
    """Check ``render()``'s arguments; return (strategy, turns, memory, context)."""
    turns = tuple(turns)
    if not set(map(type, turns)) <= {Turn}:  # one C-speed pass; subclasses are checked below
        for i, turn in enumerate(turns):
            if not isinstance(turn, Turn):
                raise TypeError(f"turns[{i}] is a {type(turn).__name__}, not a Turn")
    if not isinstance(mission, str):
        raise TypeError(f"mission must be a string, got {type(mission).__name__}")
    known = turns_left is not None
    if not known:
        turns_left = 0  # not known: no turns-left line (RenderContext.turns_left_known)
    elif isinstance(turns_left, bool) or not isinstance(turns_left, int):
        raise TypeError(f"turns_left must be an integer or None, got {turns_left!r}")
    if memory is None:
        memory = turns[-1].memory if turns else {}
    strategy = get_strategy(compression)
    registry = get_registry()
    dirs = resolve_template_dirs(template_dirs)
    shared = run_cache_for(tools, data, dirs, registry)
    if shared.tools is None or shared.data is None:
        shared.tools, shared.data = coerce_tools(tools), dict(data or {})
    ctx = RenderContext(
        mission=mission,
        system_prompt=system_prompt,
        tools=shared.tools,
        data=shared.data,
        turns_left=turns_left,
        template_dirs=dirs,
        registry=registry,
        preamble=tuple(preamble),  # type: ignore[arg-type]
        run_cache=shared,
        turns_left_known=known,
    )
    return strategy, turns, memory, ctx


def render(
    turns: Iterable[Turn],
    memory: Mapping[str, Any] | None = None,
    *,
    mission: str,
    system_prompt: str = "",
    tools: Mapping[str, Any] | None = None,
    data: Mapping[str, Any] | None = None,
    turns_left: int | None,
    compression: Compression = True,
    template_dirs: Iterable[str | os.PathLike[str]] = (),
    preamble: Iterable[Mapping[str, Any]] = (),
) -> list[Message]:
    """Render the history into the messages for the next LLM call.

    ``memory=None`` means the memory of the last turn (``{}`` before the first).
    ``compression`` picks the strategy (see :func:`normalize`); ``False`` renders
    the ``full-history`` baseline. ``preamble`` is an imported transcript's
    original messages before its first turn (``Trace.preamble``). ``turns_left=None``:
    not known, no turns-left line (``RenderContext.turns_left_known``). Pure: the same
    input gives the same output.
    """
    strategy, turns, memory, ctx = _prepare(
        turns, memory, mission=mission, system_prompt=system_prompt, tools=tools, data=data,
        turns_left=turns_left, compression=compression, template_dirs=template_dirs,
        preamble=preamble)
    return _handed_out(check_messages(strategy.to_messages(turns, memory, ctx), strategy))


def _handed_out(messages: list[Message]) -> list[Message]:
    """Copies of the messages for the caller to keep or change. Strategies reuse a
    message's dict (and a transcript turn's own messages) from one prompt to the next;
    a caller that adds ``cache_control`` to the last message must not change them."""
    return [_copy_json(m, 0) for m in messages]  # type: ignore[misc]


def _copy_json(value: Any, depth: int) -> Any:
    """A copy of the dicts and lists in a JSON-like value (strings and numbers are
    immutable; parts nested past 64 levels, which no real message has, are shared)."""
    if depth > 64:
        return value
    if type(value) is dict:
        return {k: _copy_json(v, depth + 1) for k, v in value.items()}
    if type(value) is list:
        return [_copy_json(v, depth + 1) for v in value]
    return value


def render_with_breakpoints(
    turns: Iterable[Turn],
    memory: Mapping[str, Any] | None = None,
    *,
    mission: str,
    system_prompt: str = "",
    tools: Mapping[str, Any] | None = None,
    data: Mapping[str, Any] | None = None,
    turns_left: int | None,
    compression: Compression = True,
    template_dirs: Iterable[str | os.PathLike[str]] = (),
    preamble: Iterable[Mapping[str, Any]] = (),
) -> tuple[list[Message], list[Breakpoint]]:
    """``render(...)``'s messages and the strategy's cache breakpoints for them.

    Takes exactly :func:`render`'s arguments; the breakpoints come from
    ``strategy.cache_breakpoints`` called with the same turns, memory and context
    (a bad result raises :class:`~turnpress.core.breakpoints.BreakpointError`, a
    ``ValueError`` naming the strategy and its plugin). Feed both to
    :func:`turnpress.core.providers.to_anthropic`.
    """
    strategy, turns, memory, ctx = _prepare(
        turns, memory, mission=mission, system_prompt=system_prompt, tools=tools, data=data,
        turns_left=turns_left, compression=compression, template_dirs=template_dirs,
        preamble=preamble)
    messages = check_messages(strategy.to_messages(turns, memory, ctx), strategy)
    points = check_breakpoints(strategy.cache_breakpoints(turns, memory, ctx), len(messages),
                               strategy)
    return _handed_out(messages), points


_ROLES = MESSAGE_ROLES  # a tuple: a role that is not hashable is just not one of them


def _valid_message(m: Any) -> bool:
    if type(m) is dict:  # the common case, without the abstract-class check
        role = m.get("role")
        if type(role) is str and role in _ROLES:
            content = m.get("content")
            if type(content) is str or type(content) is list:
                return True
    if not isinstance(m, Mapping) or m.get("role") not in _ROLES:
        return False
    content = m.get("content")
    if isinstance(content, str):
        return True
    # provider-shaped messages of an imported transcript (DESIGN §10): list-of-parts
    # content, or no content on an assistant message that calls tools
    return isinstance(content, list) or (content is None and bool(m.get("tool_calls")))


def check_messages(messages: Any, strategy: Any) -> list[Message]:
    """Return ``messages`` if they are a list of ``{role, content}`` dicts, else raise a
    ``TypeError`` naming the strategy and the first bad message.

    ``content`` is a string; messages replayed from an imported transcript may also
    carry ``role: "tool"`` or ``"developer"``, list-of-parts content, or ``None``
    beside ``tool_calls``.
    """
    if not isinstance(messages, list):
        raise TypeError(f"strategy {strategy.name!r} returned {type(messages).__name__}, "
                        f"not a list of messages")
    roles = _ROLES
    for m in messages:  # the common case, {"role": ..., "content": str}, inline
        if type(m) is not dict or type(m.get("content")) is not str:
            break
        role = m.get("role")
        if type(role) is not str or role not in roles:
            break
    else:
        return messages
    for i, m in enumerate(messages):
        if not _valid_message(m):
            raise TypeError(f"strategy {strategy.name!r} returned a bad message at index {i}: "
                            f"{m!r:.200}; each must be {{'role': 'system'|'user'|'assistant', "
                            f"'content': str}}")
    return messages
