"""Retention: which facts of the history a strategy's prompt still carries.

For the prompt of turn *n* the facts come from the turns before it (the full
history up to that point):

- ``mission`` — the mission text is present;
- ``tool call`` — every tool called within the strategy's own limit (its
  ``tool_call_limit`` option, if it has one: the most recent calls) appears by
  name, as a call (``name(...)``, ``(tool/name ...)`` or ``(name ...)``), not
  merely in the ``tool/`` listing;
- ``name`` — every name in the latest memory appears as a symbol;
- ``last print`` — the last line of the most recent ``println`` of a successful
  turn appears;
- ``last error`` — if the last turn failed, its error message appears.

The score is the fraction of facts present, in [0, 1] (1.0 when there is none).
Given a ``reference`` prompt (the ``full-history`` one), only the facts the
reference carries count, so ``full-history`` scores 1.0 by construction and a
fact no prompt can show is never held against a strategy. The system prompt and
the ``tool/`` listing are excluded from the search (pass them as ``exclude``),
so a static text cannot "retain" anything by accident.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from turnpress.core.compression import error_message
from turnpress.core.model import Turn

__all__ = [
    "FACT_KINDS",
    "Fact",
    "Retention",
    "counted_facts",
    "fact_present",
    "history_facts",
    "prompt_haystack",
    "retention",
    "score_facts",
    "strategy_tool_call_limit",
]

FACT_KINDS = ("mission", "tool call", "name", "last print", "last error")

_SYMBOL = r"\w\-?!*+<>=/.:'"


@dataclass(frozen=True)
class Fact:
    """One fact of the history: its ``kind`` (one of :data:`FACT_KINDS`) and ``value``
    (the tool name, the memory name, the printed line, the error message, the mission)."""

    kind: str
    value: str

    def __str__(self) -> str:
        if self.kind in ("tool call", "name"):
            return f"{self.kind} {self.value}"
        text = " ".join(self.value.split())
        return f"{self.kind} {text[:40]!r}" + ("..." if len(text) > 40 else "")


@dataclass(frozen=True)
class Retention:
    """The retention of one prompt: its ``score``, the ``facts`` counted and those
    ``dropped`` (counted but absent)."""

    score: float
    facts: tuple[Fact, ...]
    dropped: tuple[Fact, ...]


def strategy_tool_call_limit(strategy: Any) -> int | None:
    """The strategy's own limit on listed tool calls (``tool_call_limit``), or None."""
    limit = getattr(strategy, "tool_call_limit", None)
    if isinstance(limit, int) and not isinstance(limit, bool):
        return limit
    return None


def history_facts(turns: Sequence[Turn], mission: str, *,
                  tool_call_limit: int | None = None) -> list[Fact]:
    """The facts a prompt rendered from ``turns`` (oldest first) should carry."""
    facts = [Fact("mission", mission.strip())] if mission.strip() else []
    calls = [c.name for t in turns for c in t.tool_calls]
    if tool_call_limit is not None:
        calls = calls[-tool_call_limit:] if tool_call_limit > 0 else []
    facts.extend(Fact("tool call", name) for name in dict.fromkeys(calls))
    if turns:
        facts.extend(Fact("name", str(name)) for name in turns[-1].memory)
    last_print = next((p for t in reversed(turns) if t.success for p in reversed(t.prints)),
                      None)
    if last_print is not None:
        line = next((ln.strip() for ln in reversed(last_print.splitlines()) if ln.strip()), "")
        if line:
            facts.append(Fact("last print", line))
    if turns and not turns[-1].success:
        message = error_message(turns[-1]).strip()
        if message:
            facts.append(Fact("last error", message))
    return facts


@lru_cache(maxsize=4096)
def _pattern(kind: str, value: str) -> re.Pattern[str]:
    name = re.escape(value)
    if kind == "tool call":
        return re.compile(rf"(?<![{_SYMBOL}]){name}\(|tool/{name}(?![{_SYMBOL}])"
                          rf"|\({name}[\s)]")
    return re.compile(rf"(?<![{_SYMBOL}]){name}(?![{_SYMBOL}])")


def fact_present(fact: Fact, haystack: str) -> bool:
    """Whether ``haystack`` (see :func:`prompt_haystack`) carries ``fact``."""
    if fact.kind in ("tool call", "name"):
        return _pattern(fact.kind, fact.value).search(haystack) is not None
    return fact.value in haystack


def prompt_haystack(messages: Iterable[Mapping[str, Any]], exclude: Iterable[str] = ()) -> str:
    """The text searched for facts: every message's content, with each ``exclude``
    text (the system prompt, the ``tool/`` listing) cut out."""
    text = "\n\x00\n".join(m["content"] for m in messages)
    for part in exclude:
        if part:
            text = text.replace(part, "\x00")
    return text


def counted_facts(turns: Sequence[Turn], mission: str, *, tool_call_limit: int | None = None,
                  reference: str | None = None) -> list[Fact]:
    """:func:`history_facts`, keeping only those the ``reference`` haystack carries."""
    facts = history_facts(turns, mission, tool_call_limit=tool_call_limit)
    if reference is None:
        return facts
    return [f for f in facts if fact_present(f, reference)]


def score_facts(facts: Sequence[Fact], haystack: str) -> Retention:
    """The :class:`Retention` of a prompt (as :func:`prompt_haystack`) for ``facts``."""
    dropped = tuple(f for f in facts if not fact_present(f, haystack))
    value = 1.0 if not facts else (len(facts) - len(dropped)) / len(facts)
    return Retention(value, tuple(facts), dropped)


def retention(turns: Sequence[Turn], messages: Sequence[Mapping[str, Any]], *, mission: str,
              strategy: Any = None, exclude: Iterable[str] = (),
              reference: Sequence[Mapping[str, Any]] | str | None = None) -> Retention:
    """The retention of ``messages``, the prompt rendered from ``turns``.

    ``strategy`` supplies its ``tool_call_limit``; ``reference`` (messages or a
    :func:`prompt_haystack`) is the full-history prompt whose facts alone count.
    """
    exclude = tuple(exclude)
    if reference is not None and not isinstance(reference, str):
        reference = prompt_haystack(reference, exclude)
    facts = counted_facts(turns, mission, tool_call_limit=strategy_tool_call_limit(strategy),
                          reference=reference)
    return score_facts(facts, prompt_haystack(messages, exclude))
