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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, ClassVar

from turnpress.core.clojure import to_clojure
from turnpress.core.model import Fn, Message, Tool, Turn, coerce_tools
from turnpress.core.registry import PluginError, Registry, get_registry
from turnpress.core.templates import get_environment, resolve_template_dirs

__all__ = [
    "BASELINE_STRATEGY",
    "DEFAULT_STRATEGY",
    "Breakpoint",
    "NamespaceView",
    "RenderContext",
    "Strategy",
    "StrategyNotApplicable",
    "check_messages",
    "get_strategy",
    "normalize",
    "parse_strategy_spec",
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
    turns, memory and context always give the same messages.
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
    """The keyword-only constructor arguments of a strategy class, with defaults."""
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):
        return {}
    return {
        p.name: p.default
        for p in sig.parameters.values()
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is not p.empty
    }


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
        """``to_clojure(...)``'s text."""
        return to_clojure(value, limit, printable_limit)[0]

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
        return " ".join(to_clojure(a, ARG_LIMIT, ARG_PRINTABLE_LIMIT)[0] for a in args)

    # -- templates ------------------------------------------------------------------

    def template(self, name: str, /, **variables: Any) -> str:
        """Render template ``name`` with ``variables`` (trailing newlines removed)."""
        env = get_environment(self.template_dirs)
        return env.get_template(name).render(**variables).rstrip("\n")

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
        depend on memory), ``stable=False`` the others.
        """
        view = NamespaceView(self, memory, show_samples, minimal)
        wanted = None if only is None else set(only)
        sections = []
        for reg in self.registry.namespace_renderers():
            if wanted is not None and reg.name not in wanted:
                continue
            if stable is not None and (reg.order < USER_NAMESPACE_ORDER) != stable:
                continue
            try:
                text = reg.value(view)
            except Exception as exc:
                raise PluginError(
                    f"namespace renderer {reg.name!r} of {reg.plugin.source} failed: "
                    f"{type(exc).__name__}: {exc}", plugin=reg.plugin.name,
                    distribution=reg.plugin.distribution,
                    entry_point=reg.plugin.entry_point) from exc
            if text:
                sections.append(text.rstrip("\n"))
        return sections

    def tool_calls(self, turns: Sequence[Turn], limit: int) -> str | None:
        """The ``;; Tool calls made:`` section over all turns (failed ones too), or None
        before any turn ran."""
        if not turns:
            return None
        calls = [
            {"name": call.name, "args": self.call_args(call.args)}
            for call in last_items((t.tool_calls for t in turns), limit)
        ]
        return self.template("history/tool_calls.j2", calls=calls)

    def output(self, turns: Sequence[Turn], limit: int, *,
               max_chars: int | None = None) -> str | None:
        """The ``;; Output:`` section: the last ``limit`` println calls of successful turns.

        With ``max_chars``, an entry longer than that is cut so that it ends in ``...``
        and is ``max_chars`` characters long, ``...`` included (``max_chars >= 3``).
        """
        if not has_printed(turns):
            return None
        prints = last_items((t.prints for t in turns if t.success), limit)
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
        """``Turns left: N``, or the final-turn warning when N == 1."""
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
    """The last ``limit`` items of the concatenated ``groups``, oldest first.

    Walks from the end, so the cost depends on ``limit``, not on the history length.
    """
    if limit <= 0:
        return []
    picked: list[Any] = []
    for group in reversed(list(groups)):
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
        kind = type(default).__name__
        raise ValueError(f"strategy {strategy!r}: option {option!r} expects a {kind}, "
                         f"got {text!r}") from None
    return text


def _resolve(compression: Any, registry: Registry) -> tuple[type, dict[str, Any]]:
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


def get_strategy(compression: Any = True, /, registry: Registry | None = None,
                 **options: Any) -> Any:
    """The strategy instance that ``render(..., compression=compression)`` uses.

    Accepts everything :func:`normalize` accepts, plus a ready instance; extra
    keyword arguments are options. ``False``/``None`` give the ``full-history``
    baseline. Bad names and options raise ``ValueError``.
    """
    registry = registry or get_registry()
    if not options and _is_strategy_class(type(compression)):
        return compression
    cls, given = _resolve(compression, registry)
    return _instantiate(cls, _validated(cls, {**given, **options}))


def normalize(compression: Any) -> tuple[str | None, dict[str, Any]]:
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


def _prepare(
    turns: Iterable[Turn],
    memory: Mapping[str, Any] | None,
    *,
    mission: str,
    system_prompt: str,
    tools: Mapping[str, Any] | None,
    data: Mapping[str, Any] | None,
    turns_left: int,
    compression: Any,
    template_dirs: Iterable[str | os.PathLike[str]],
    preamble: Iterable[Mapping[str, Any]] = (),
) -> tuple[Any, tuple[Turn, ...], Mapping[str, Any], RenderContext]:
    """Check ``render()``'s arguments; return (strategy, turns, memory, context)."""
    turns = tuple(turns)
    for i, turn in enumerate(turns):
        if not isinstance(turn, Turn):
            raise TypeError(f"turns[{i}] is a {type(turn).__name__}, not a Turn")
    if not isinstance(mission, str):
        raise TypeError(f"mission must be a string, got {type(mission).__name__}")
    if isinstance(turns_left, bool) or not isinstance(turns_left, int):
        raise TypeError(f"turns_left must be an integer, got {turns_left!r}")
    if memory is None:
        memory = turns[-1].memory if turns else {}
    strategy = get_strategy(compression)
    ctx = RenderContext(
        mission=mission,
        system_prompt=system_prompt,
        tools=coerce_tools(tools),
        data=dict(data or {}),
        turns_left=turns_left,
        template_dirs=resolve_template_dirs(template_dirs),
        preamble=tuple(preamble),  # type: ignore[arg-type]
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
    turns_left: int,
    compression: Any = True,
    template_dirs: Iterable[str | os.PathLike[str]] = (),
    preamble: Iterable[Mapping[str, Any]] = (),
) -> list[Message]:
    """Render the history into the messages for the next LLM call.

    ``memory=None`` means the memory of the last turn (``{}`` before the first).
    ``compression`` picks the strategy (see :func:`normalize`); ``False`` renders
    the ``full-history`` baseline. ``preamble`` is an imported transcript's
    original messages before its first turn (``Trace.preamble``). Pure: the same
    input gives the same output.
    """
    strategy, turns, memory, ctx = _prepare(
        turns, memory, mission=mission, system_prompt=system_prompt, tools=tools, data=data,
        turns_left=turns_left, compression=compression, template_dirs=template_dirs,
        preamble=preamble)
    return check_messages(strategy.to_messages(turns, memory, ctx), strategy)


def render_with_breakpoints(
    turns: Iterable[Turn],
    memory: Mapping[str, Any] | None = None,
    *,
    mission: str,
    system_prompt: str = "",
    tools: Mapping[str, Any] | None = None,
    data: Mapping[str, Any] | None = None,
    turns_left: int,
    compression: Any = True,
    template_dirs: Iterable[str | os.PathLike[str]] = (),
    preamble: Iterable[Mapping[str, Any]] = (),
) -> tuple[list[Message], list[Breakpoint]]:
    """``render(...)``'s messages and the strategy's cache breakpoints for them.

    Takes exactly :func:`render`'s arguments; the breakpoints come from
    ``strategy.cache_breakpoints`` called with the same turns, memory and context.
    Feed both to :func:`turnpress.core.providers.to_anthropic`.
    """
    strategy, turns, memory, ctx = _prepare(
        turns, memory, mission=mission, system_prompt=system_prompt, tools=tools, data=data,
        turns_left=turns_left, compression=compression, template_dirs=template_dirs,
        preamble=preamble)
    messages = check_messages(strategy.to_messages(turns, memory, ctx), strategy)
    return messages, list(strategy.cache_breakpoints(turns, memory, ctx))


def _valid_message(m: Any) -> bool:
    if not isinstance(m, Mapping) or m.get("role") not in ("system", "user", "assistant",
                                                           "tool"):
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
    carry ``role: "tool"``, list-of-parts content, or ``None`` beside ``tool_calls``.
    """
    if not isinstance(messages, list):
        raise TypeError(f"strategy {strategy.name!r} returned {type(messages).__name__}, "
                        f"not a list of messages")
    for i, m in enumerate(messages):
        if not _valid_message(m):
            raise TypeError(f"strategy {strategy.name!r} returned a bad message at index {i}: "
                            f"{m!r:.200}; each must be {{'role': 'system'|'user'|'assistant', "
                            f"'content': str}}")
    return messages
