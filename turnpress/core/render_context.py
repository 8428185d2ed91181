"""What a strategy is given besides the turns: :class:`RenderContext`, and
:class:`NamespaceView` for namespace renderers.

The context carries the run (mission, system prompt, tools, data, turns left, an
imported transcript's preamble) and the shared building blocks (templates, namespace
sections, tool calls, output, failed attempts, the turns-left line), so a plugin
strategy reuses the built-in formats instead of copying them. What the renders of
one run share is kept in its :class:`~turnpress.core.run_cache.RunCache`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from turnpress.core.clojure import to_clojure
from turnpress.core.history import error_message, has_printed, newest_items
from turnpress.core.message_text import message_body
from turnpress.core.model import Memory, Message, Tool, Turn
from turnpress.core.pricing import CACHE_RULES, DEFAULT_CACHE, CacheRules, Price, get_price
from turnpress.core.registry import PluginError, Registry, get_registry
from turnpress.core.run_cache import MAX_TEXTS, NotPlain, RunCache, run_cache_for, value_key
from turnpress.core.templates import TWIN_NAMES, builtin_twin, get_environment
from turnpress.core.tokens import TokenCounter

_T = TypeVar("_T")

__all__ = [
    "ARG_LIMIT",
    "ARG_PRINTABLE_LIMIT",
    "SAMPLE_LIMIT",
    "SAMPLE_PRINTABLE_LIMIT",
    "USER_NAMESPACE_ORDER",
    "NamespaceView",
    "RenderContext",
]

# Namespace sections ordered before user/ must not depend on memory: together with
# the mission they form the stable, cacheable head of the prompt (NS-012).
USER_NAMESPACE_ORDER = 300

SAMPLE_LIMIT = 3
SAMPLE_PRINTABLE_LIMIT = 80
ARG_LIMIT = 3
ARG_PRINTABLE_LIMIT = 60

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
            parts.append((k, value_key(v)))
        except NotPlain:
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
    #: the prompt cache the prompts will meet (its name, ``openai`` / ``anthropic`` /
    #: ``none``, and its rules) and the price list (DESIGN §11): set by ``compare
    #: --cache/--price``, ``compress(cache=, price=)`` and ``Agent`` from its LLM
    #: adapter; when nothing says, the ``openai`` cache priced ``openai-gpt-4.1``
    cache: CacheRules = CACHE_RULES[DEFAULT_CACHE]
    price: Price = field(default_factory=lambda: get_price(None, DEFAULT_CACHE))

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
                key = (value_key(value), limit, printable_limit)
            except NotPlain:
                return to_clojure(value, limit, printable_limit)[0]
        else:
            return to_clojure(value, limit, printable_limit)[0]
        cache: RunCache = self.run_cache  # type: ignore[assignment]
        text = cache.clojure.get(key)
        if text is None:
            text = to_clojure(value, limit, printable_limit)[0]
            if len(cache.clojure) >= MAX_TEXTS:
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
        rendered without that cache for a while; its text is the same either way. A hot
        built-in template with a Python twin (``core.templates.builtin_twin``) renders
        through it while no override replaces it.
        """
        if name in TWIN_NAMES:  # a hot built-in template: its Python twin, when it is used
            env = get_environment(self.template_dirs)
            twin = builtin_twin(env, name)
            if twin is not None:
                try:
                    return twin(env, **variables).rstrip("\n")  # type: ignore[no-any-return]
                except Exception:  # a value it was not written for: Jinja renders it
                    pass
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

    def token_counter(self, tokenizer: str) -> TokenCounter:
        """The run's :class:`~turnpress.core.tokens.TokenCounter` for the registered
        ``tokenizer``: for a strategy that counts the messages it renders. ``compare``
        leaves its own counter here, so the texts it counted are not encoded again;
        else one is made for the run. Its counts are the tokenizer's."""
        cache: RunCache = self.run_cache  # type: ignore[assignment]
        counter = cache.counters.get(tokenizer)
        if counter is None:
            counter = cache.counters[tokenizer] = TokenCounter(tokenizer,
                                                               registry=self.registry)
        return counter  # type: ignore[no-any-return]

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
        the turns-left line for that point. A turn of an imported transcript (it has
        ``messages``) shows what came after its assistant message as sent: its tool
        results and the user's words, one after the other (it has no REPL output nor
        result of its own)."""
        if turn.messages:
            sent = [message_body(m) for m in turn.messages if m.get("role") != "assistant"]
            return "\n\n".join(t for t in (*sent, self.turns_left_line(turns_left)) if t)
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
