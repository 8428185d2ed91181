"""The Strategy contract: what a history strategy is, its options and their checks.

A strategy is any class with a ``name`` and ``to_messages(turns, memory, ctx)``;
:class:`Strategy` is the optional base class that gives it ``options``, equality,
the default ``cache_breakpoints`` and ``check_int`` / ``check_choice`` for its
constructor. What a ``compression=`` argument may be is :data:`Compression`.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, ClassVar

from turnpress.core.model import INSTRUCTION_ROLES, Message, Turn
from turnpress.core.render_context import RenderContext

__all__ = [
    "BASELINE_STRATEGY",
    "DEFAULT_STRATEGY",
    "Breakpoint",
    "Compression",
    "Strategy",
    "StrategyNotApplicable",
    "breakpoints_for",
    "default_breakpoints",
    "option_defaults",
]

#: the strategy of ``compression=True`` (DESIGN §11): the compacted view rebuilt when
#: the price says so; ``single-user-coalesced`` keeps its exact format by name
DEFAULT_STRATEGY = "price-scheduled"
BASELINE_STRATEGY = "full-history"

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
        The default (:func:`default_breakpoints`) is the end of the leading system
        messages and the end of the prompt.

        One exception: a breakpoint at the very end of the prompt may be a
        read-only marker (a client's last ``cache_control`` reads what the previous
        prompt wrote), so a strategy whose boundary moves next turn may still mark
        its end; every other breakpoint must be repeated by the following prompts.
        Anthropic reads a prefix an earlier prompt wrote only when it ends at most about
        20 content blocks before one of this prompt's markers, so a prefix marked for
        the next prompt further back than that from its end is read only if the next
        prompt marks it again (as ``observation-masking`` does after a boundary move).
        """
        return default_breakpoints(self.to_messages(turns, memory, ctx))

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
``True`` (the default strategy, ``price-scheduled``; the default everywhere),
``False``/``None`` or ``"none"``/``"off"``/``"false"`` (the ``full-history`` baseline),
a strategy name or spec string
(``"rolling-window:window=3"``), a Strategy class, a Strategy instance, or
``(name_or_class, {options})``."""


def default_breakpoints(messages: Sequence[Message]) -> list[Breakpoint]:
    """The breakpoints of a strategy that says nothing about caching: the end of the
    leading system (or ``developer``) messages, the stable head, and the end of the
    prompt."""
    head = 0
    while head < len(messages) and messages[head].get("role") in INSTRUCTION_ROLES:
        head += 1
    points: list[Breakpoint] = [(head - 1, None)] if head else []
    if messages and len(messages) - 1 != head - 1:
        points.append((len(messages) - 1, None))
    return points


def breakpoints_for(strategy: Any, turns: Sequence[Turn], memory: Mapping[str, Any],
                    ctx: RenderContext, messages: Sequence[Message]) -> Any:
    """``strategy.cache_breakpoints(turns, memory, ctx)`` when the strategy defines its
    own, else :func:`default_breakpoints` of the ``messages`` it rendered (without
    rendering them again). The result is not checked here."""
    method = getattr(type(strategy), "cache_breakpoints", None)
    if method is None or method is Strategy.cache_breakpoints:
        return default_breakpoints(messages)
    return strategy.cache_breakpoints(turns, memory, ctx)
