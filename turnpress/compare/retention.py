"""Retention and needed-fact recall: what of the history a strategy's prompt still shows.

**Retention** (DESIGN §7) checks every strategy against ONE fact set, the same
for all of them and drawn from the history alone, never from a strategy's own
limits. For the prompt of turn *n* the facts come from the turns before it:

- ``mission`` — the mission text;
- ``tool call`` — every distinct tool call of the run, name and arguments: the
  name as a call (``name(...)``, ``(tool/name ...)``, ``(name ...)``, a JSON
  ``"name": "..."`` or a fenced ```` ```name ```` block, not merely the ``tool/``
  listing) and every argument leaf (string or number) verbatim;
- ``name`` — every name defined in the latest memory, as a whole symbol;
- ``printed line`` — every distinct non-blank line the agent printed;
- ``last error`` — the last turn's error message, while that turn failed.

Given the ``full-history`` prompt as reference, only the facts it shows count
(a tool call whose arguments it cannot show, because they were computed, counts
by its name),
so ``full-history`` scores 1.0 by construction and a strategy that shows 5 of
20 tool calls keeps 5/20 of them. The system prompt and the ``tool/`` listing
are cut from the searched text (``exclude``), so static text retains nothing.

**Needed-fact recall** (DESIGN §11): for each turn, the identifiers the agent's
*next* message actually uses (file paths, names, numbers of 3+ digits, quoted
strings) that first appeared in earlier feedback (not in the system prompt, the
mission, or the agent's own earlier messages). Recall is the share of them the
strategy's prompt for that turn still shows; over many prompts the counts are
pooled (needed facts shown / needed facts). The real run's later behaviour is
the oracle, so this measures what the agent went on to need, not a checklist.

This module defines the facts and how a text shows one. Over a whole run,
``compare/fact_index.py`` remembers which facts each distinct message text shows
(:class:`~turnpress.compare.fact_index.FactIndex`), and ``compare/needed_facts.py``
finds each turn's needed facts (:class:`~turnpress.compare.needed_facts.NeededFacts`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from turnpress.core.compression import error_message
from turnpress.core.model import Turn
from turnpress.core.tokens import message_body

__all__ = [
    "FACT_KINDS",
    "Fact",
    "Retention",
    "counted_facts",
    "fact_present",
    "fact_probes",
    "history_facts",
    "name_only",
    "prompt_haystack",
    "retention",
    "score_facts",
    "tool_call_fact",
]

FACT_KINDS = ("mission", "tool call", "name", "printed line", "last error", "needed")

_SYMBOL = r"\w\-?!*+<>=/.:'"
_MAX_LEAF = 400  # longer argument strings are checked by their first 400 characters


@dataclass(frozen=True)
class Fact:
    """One fact of the history: its ``kind`` (one of :data:`FACT_KINDS`), ``value``
    (tool name, memory name, printed line, error message, mission, identifier) and,
    for a tool call, the argument ``leaves`` that must appear too."""

    kind: str
    value: str
    leaves: tuple[str, ...] = field(default=())

    def __str__(self) -> str:
        if self.kind == "tool call":
            args = ", ".join(_cut(" ".join(a.split()), 30) for a in self.leaves)
            return f"tool call {self.value}({_cut(args, 60)})"
        if self.kind == "name":
            return f"name {self.value}"
        text = " ".join(self.value.split())
        return f"{self.kind} {text[:40]!r}" + ("..." if len(text) > 40 else "")


def _cut(text: str, size: int) -> str:
    """``text``, or its first ``size`` characters and ``...`` when it is longer."""
    return text if len(text) <= size else text[:size] + "..."


@dataclass(frozen=True)
class Retention:
    """The retention of one prompt: its ``score``, the ``facts`` counted and those
    ``dropped`` (counted but absent)."""

    score: float
    facts: tuple[Fact, ...]
    dropped: tuple[Fact, ...]


def _leaves(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        if value.strip():
            out.append(value[:_MAX_LEAF])
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, (int, float)):
        out.append(repr(value))
    elif isinstance(value, Mapping):
        for v in value.values():
            _leaves(v, out)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            _leaves(v, out)


def tool_call_fact(name: str, args: Any) -> Fact:
    """The ``tool call`` fact of a call of ``name`` with ``args``: the name and every
    argument leaf (a raw string argument as one leaf, cut to its first 400 characters)."""
    if isinstance(args, str):  # arguments kept as a raw (invalid JSON) string
        leaves: list[str] = [args[:_MAX_LEAF]] if args.strip() else []
    else:
        leaves = []
        _leaves(args, leaves)
    return Fact("tool call", name, tuple(dict.fromkeys(leaves)))


def history_facts(turns: Sequence[Turn], mission: str) -> list[Fact]:
    """The facts a prompt rendered from ``turns`` (oldest first) should carry: the
    same for every strategy."""
    facts = [Fact("mission", mission.strip())] if mission.strip() else []
    facts.extend(dict.fromkeys(tool_call_fact(c.name, c.args)
                               for t in turns for c in t.tool_calls))
    if turns:
        facts.extend(Fact("name", str(name)) for name in turns[-1].memory)
    lines = (ln.strip() for t in turns for p in t.prints for ln in p.splitlines())
    facts.extend(Fact("printed line", ln) for ln in dict.fromkeys(ln for ln in lines if ln))
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
                          rf"|\({name}[\s)]|\"{name}\"|```{name}(?!\w)")
    return re.compile(rf"(?<![{_SYMBOL}]){name}(?![{_SYMBOL}])")


def _whole(needle: str, haystack: str, at: int | None = None) -> bool:
    """``needle`` occurs in ``haystack`` and not as part of a longer word (``item-1`` is
    not in ``item-16``); ``at``: where it first occurs (-1: nowhere), when known."""
    if at is None:
        at = haystack.find(needle)
    if at < 0:
        return False
    left, right = needle[0].isalnum(), needle[-1].isalnum()
    if not (left or right):
        return True
    size = len(needle)
    while at >= 0:
        if not (left and at > 0 and (haystack[at - 1].isalnum() or haystack[at - 1] == "_")) \
                and not (right and at + size < len(haystack)
                         and (haystack[at + size].isalnum() or haystack[at + size] == "_")):
            return True
        at = haystack.find(needle, at + 1)
    return False


@lru_cache(maxsize=65536)
def _escaped(needle: str) -> str:
    return json.dumps(needle, ensure_ascii=False)[1:-1]  # as inside JSON arguments


def _literal(needle: str, haystack: str, at: int | None = None) -> bool:
    if _whole(needle, haystack, at):
        return True
    escaped = _escaped(needle)
    return escaped != needle and _whole(escaped, haystack)


def fact_present(fact: Fact, haystack: str,
                 symbols: dict[tuple[str, str], bool] | None = None,
                 at: int | None = None) -> bool:
    """Whether ``haystack`` (one message's text, or :func:`prompt_haystack`) shows ``fact``.
    ``symbols``: what is known of this haystack's tool names and memory names shown as
    symbols (filled as they are checked: the tool calls of a run share a few names, and
    a long text would be scanned for each name once per call). ``at``: where the fact's
    first probe (:func:`_probe`: its first argument, else its value) first occurs in
    ``haystack`` (-1: nowhere), when the caller found it (it is not searched again)."""
    if fact.kind in ("tool call", "name"):
        leaves = fact.leaves
        # the arguments first: far more selective than the name, and a plain search
        if leaves:
            if fact.value not in haystack or not _literal(leaves[0], haystack, at) \
                    or not all(_literal(a, haystack) for a in leaves[1:]):
                return False
        elif (at is None or at < 0) and fact.value not in haystack:
            return False
        if symbols is None:
            return _symbol_shown(fact.kind, fact.value, haystack)
        key = (fact.kind, fact.value)
        shown = symbols.get(key)
        if shown is None:
            shown = symbols[key] = _symbol_shown(fact.kind, fact.value, haystack)
        return shown
    return _literal(fact.value, haystack, at)


_SYMBOL_CHARS = frozenset("-?!*+<>=/.:'_")


def _is_symbol_char(c: str) -> bool:
    return c.isalnum() or c in _SYMBOL_CHARS


def _symbol_shown(kind: str, name: str, text: str) -> bool:
    """What :func:`_pattern` matches, by scanning the occurrences of ``name`` (much
    faster than the regex on long texts): a whole symbol, or for a tool call one of
    ``name(``, ``tool/name``, ``(name `` / ``(name)``, ``"name"``, ```` ```name ````."""
    size = len(name)
    at = text.find(name)
    while at >= 0:
        before = text[at - 1] if at else ""
        after = text[at + size] if at + size < len(text) else ""
        free_before = not before or not _is_symbol_char(before)
        if kind != "tool call":
            if free_before and (not after or not _is_symbol_char(after)):
                return True
        elif ((after == "(" and free_before)
              or (text.endswith("tool/", 0, at) and (not after or not _is_symbol_char(after)))
              or (before == "(" and (after == ")" or after.isspace()))
              or (before == '"' and after == '"')
              or (text.endswith("```", 0, at) and not (after.isalnum() or after == "_"))):
            return True
        at = text.find(name, at + 1)
    return False


def prompt_haystack(messages: Iterable[Mapping[str, Any]], exclude: Iterable[str] = ()) -> str:
    """The text searched for facts: every message's text (:func:`message_body`), with
    each ``exclude`` text (the system prompt, the ``tool/`` listing) cut out."""
    text = "\n\x00\n".join(message_body(m) for m in messages)
    for part in exclude:
        if part:
            text = text.replace(part, "\x00")
    return text


def name_only(fact: Fact) -> Fact | None:
    """For a tool call with arguments, the same call by name alone (what the reference
    can still show when the arguments were computed at run time), else None."""
    return Fact("tool call", fact.value) if fact.kind == "tool call" and fact.leaves else None


def counted_facts(turns: Sequence[Turn], mission: str, *,
                  reference: str | None = None) -> list[Fact]:
    """:func:`history_facts`, keeping only those the ``reference`` haystack carries; a
    tool call whose arguments the reference does not show (they were computed, as in
    ``(tool/call (:id x))``) counts by its name alone."""
    facts = history_facts(turns, mission)
    if reference is None:
        return facts
    out: dict[Fact, None] = {}
    for f in facts:
        if fact_present(f, reference):
            out[f] = None
            continue
        fallback = name_only(f)
        if fallback is not None and fact_present(fallback, reference):
            out[fallback] = None
    return list(out)


def score_facts(facts: Sequence[Fact], haystack: str) -> Retention:
    """The :class:`Retention` of a prompt (as :func:`prompt_haystack`) for ``facts``."""
    dropped = tuple(f for f in facts if not fact_present(f, haystack))
    value = 1.0 if not facts else (len(facts) - len(dropped)) / len(facts)
    return Retention(value, tuple(facts), dropped)


def retention(turns: Sequence[Turn], messages: Sequence[Mapping[str, Any]], *, mission: str,
              exclude: Iterable[str] = (),
              reference: Sequence[Mapping[str, Any]] | str | None = None) -> Retention:
    """The retention of ``messages``, the prompt rendered from ``turns``; ``reference``
    (messages or a :func:`prompt_haystack`) is the full-history prompt whose facts
    alone count. A tool call that spans messages is not seen (each message is
    searched on its own, as :class:`FactIndex` does)."""
    exclude = tuple(exclude)
    if reference is not None and not isinstance(reference, str):
        reference = prompt_haystack(reference, exclude)
    facts = counted_facts(turns, mission, reference=reference)
    return score_facts(facts, prompt_haystack(messages, exclude))


def fact_probes(fact: Fact) -> tuple[str, str | None]:
    """A text, and an alternative one or None, that a haystack showing ``fact`` must
    contain (a cheap first test: :func:`fact_present` runs only where it passes, given
    where the first one first occurs)."""
    if fact.kind in ("tool call", "name"):
        if not fact.leaves:
            return fact.value, None
        needle = fact.leaves[0]
    else:
        needle = fact.value
    escaped = _escaped(needle)
    return needle, (escaped if escaped != needle else None)
