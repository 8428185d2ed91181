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
"""

from __future__ import annotations

import json
import operator
import re
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import accumulate, chain, compress, count, groupby, islice, repeat
from operator import itemgetter
from typing import Any

from turnpress.core.compression import error_message
from turnpress.core.model import Turn
from turnpress.core.tokens import message_body

__all__ = [
    "FACT_KINDS",
    "Fact",
    "FactIndex",
    "NeededFacts",
    "Retention",
    "RunFacts",
    "counted_facts",
    "fact_present",
    "history_facts",
    "identifiers",
    "name_only",
    "prompt_haystack",
    "retention",
    "score_facts",
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


def _tool_call_fact(name: str, args: Any) -> Fact:
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
    facts.extend(dict.fromkeys(_tool_call_fact(c.name, c.args)
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


class RunFacts:
    """:func:`history_facts` of each prompt of one run, as ids of a :class:`FactIndex`,
    built turn by turn: each turn's tool calls and printed lines are made into facts
    once, not again for every later prompt.

    :meth:`pairs` gives, for each fact of ``history_facts(turns, mission)`` in order,
    ``(id of the fact, id of name_only(fact) or of the fact)``. Calls may come in any
    order: when ``turns`` does not extend the turns seen so far, it starts again.
    """

    def __init__(self, index: FactIndex, mission: str) -> None:
        self.index = index
        self.mission = mission
        self._head = [self._pair(f) for f in history_facts((), mission)]
        self._reset()

    def _reset(self) -> None:
        self._turns: tuple[Turn, ...] = ()
        self._calls: dict[Fact, tuple[int, int]] = {}
        self._lines: dict[str, tuple[int, int]] = {}

    def _pair(self, fact: Fact) -> tuple[int, int]:
        ids = self.index.ids((fact, name_only(fact) or fact))
        return ids[0], ids[1]

    def pairs(self, turns: Sequence[Turn]) -> list[tuple[int, int]]:
        """The ``(fact id, fallback id)`` of each fact of ``history_facts(turns, mission)``."""
        turns = tuple(turns)
        done = len(self._turns)
        if len(turns) < done or not all(map(operator.is_, turns, self._turns)):
            self._reset()
            done = 0
        calls, lines = self._calls, self._lines
        for t in turns[done:]:
            for c in t.tool_calls:
                fact = _tool_call_fact(c.name, c.args)
                if fact not in calls:
                    calls[fact] = self._pair(fact)
            for p in t.prints:
                for ln in p.splitlines():
                    ln = ln.strip()
                    if ln and ln not in lines:
                        lines[ln] = self._pair(Fact("printed line", ln))
        self._turns = turns
        out = [*self._head, *calls.values()]
        if turns:
            out.extend(self._pair(Fact("name", str(name))) for name in turns[-1].memory)
        out.extend(lines.values())
        if turns and not turns[-1].success:
            message = error_message(turns[-1]).strip()
            if message:
                out.append(self._pair(Fact("last error", message)))
        return out


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


def _probe(fact: Fact) -> tuple[str, str | None]:
    """A text, and an alternative one or None, that a haystack showing ``fact`` must
    contain (a cheap first test: :func:`fact_present` runs only where it passes)."""
    if fact.kind in ("tool call", "name"):
        if not fact.leaves:
            return fact.value, None
        needle = fact.leaves[0]
    else:
        needle = fact.value
    escaped = _escaped(needle)
    return needle, (escaped if escaped != needle else None)


TEXT_CHARS = 2_000_000  # message texts from which a FactIndex starts a generation (see next_turn)
# what a FactIndex knows of one text: the text without the excluded parts, the ids found
# shown, [eager ids searched, tracked ids searched], {lazy id: shown}, and the symbols
# known shown or not (fact_present's ``symbols``)
_Entry = tuple[str, set[int], list[int], dict[int, bool], dict[tuple[str, str], bool]]
LAZY_RESULTS = 100_000  # (text, lazy fact) answers a FactIndex keeps (see shows)
_FIRST, _PRESENT, _UPTO = itemgetter(0), itemgetter(1), itemgetter(2)
_LARGE = 256  # texts from which a prompt's texts are sorted out by C-level passes
_WORD = re.compile(r"\w+")
_MANY = 32  # facts from which one text is searched for them by one C-level pass
_GROUPED = 8  # texts needing the same facts, from which one pass per fact searches them


def _scan_texts(entries: Sequence[_Entry], new: Sequence[int], facts: Sequence[Fact],
                probes: Sequence[tuple[str, str | None]]) -> None:
    """Add to each of ``entries``' present ids those of ``new`` its text shows: each
    fact's probes searched in every text by one C-level pass (``map(str.find, ...)``),
    ``fact_present`` run on the texts holding one, with where the first probe first
    occurs (-1: only the second one occurs)."""
    texts = list(map(_FIRST, entries))
    positions = range(len(texts))
    for i in new:
        first, other = probes[i]
        ats = list(map(str.find, texts, repeat(first)))
        hits = dict(compress(zip(positions, ats, strict=True), map((-1).__lt__, ats)))
        if other is not None:
            for k in compress(positions, map(str.__contains__, texts, repeat(other))):
                hits.setdefault(k, -1)
        for k, at in hits.items():
            text, present, _upto, _lazy, symbols = entries[k]
            if i not in present and fact_present(facts[i], text, symbols, at):
                present.add(i)


class FactIndex:
    """Which facts each distinct message text shows, for the prompts of one run.

    Facts get ids as they are added; each distinct message text is searched once
    per fact (lazily, the first time a prompt holding it is scored), so scoring
    a prompt is a union of small sets, not a search of its whole text. Facts added
    with ``lazy=True`` (a turn's needed facts, asked about on that turn only) are
    left out of :meth:`shown` and searched on demand by :meth:`shows`. The caller
    calls :meth:`next_turn` before each turn's prompts, which bounds what is kept.
    """

    def __init__(self, exclude: Iterable[str] = ()) -> None:
        self.exclude = tuple(p for p in exclude if p)
        self.facts: list[Fact] = []
        self._probes: list[tuple[str, str | None]] = []
        self._first_probes: list[str] = []  # each id's first probe (``_probes[i][0]``)
        self._has_alt: list[bool] = []  # whether it has a second one
        self._eager: list[int] = []  # the ids :meth:`shown` searches for, in order
        self._eager_at: dict[int, int] = {}  # id -> its position in ``_eager``
        self._lazy: set[int] = set()
        self._ids: dict[Fact, int] = {}
        self._tracked: list[int] = []  # the ids :meth:`shown_tracked` searches for, in order
        self._tracked_set: set[int] = set()
        # text -> what is known of it (_Entry)
        self._texts: dict[str, _Entry] = {}
        # bounded like TokenCounter's texts: this generation and the one before, a new
        # one started by next_turn (an entry dropped and met again is searched again,
        # to the same answers)
        self._old_texts: dict[str, _Entry] = {}
        self._text_chars = 0
        self._lazy_results = 0  # answers in the entries' {lazy id: shown} dicts

    def ids(self, facts: Iterable[Fact], *, lazy: bool = False) -> list[int]:
        """The ids of ``facts``, adding the new ones (``lazy``: searched only on demand,
        by :meth:`shows`)."""
        out = []
        for f in facts:
            i = self._ids.get(f)
            if i is None:
                i = self._ids[f] = len(self.facts)
                self.facts.append(f)
                probe = _probe(f)
                self._probes.append(probe)
                self._first_probes.append(probe[0])
                self._has_alt.append(probe[1] is not None)
                if lazy:
                    self._lazy.add(i)
                else:
                    self._eager_at[i] = len(self._eager)
                    self._eager.append(i)
            elif not lazy and i in self._lazy:
                self._lazy.discard(i)
                self._eager_at[i] = len(self._eager)
                self._eager.append(i)
            out.append(i)
        return out

    def _entry(self, body: str) -> _Entry:
        entry = self._texts.get(body)
        if entry is None:
            entry = self._old_texts.get(body)
            if entry is None:
                text = body
                for part in self.exclude:
                    if part in text:
                        text = text.replace(part, "\x00")
                entry = (text, set(), [0, 0], {}, {})
            self._texts[body] = entry
            self._text_chars += len(body)
        return entry

    def next_turn(self) -> None:
        """Start a new turn's prompts: past ``TEXT_CHARS``, what is known of the texts
        starts a new generation, the last one kept. Never within a turn, so every text
        of the turn before is still known, however long its prompts (a generation
        dropped within a turn longer than it made every text searched again)."""
        if self._text_chars > TEXT_CHARS:
            self._old_texts, self._texts, self._text_chars = self._texts, {}, 0

    def shown(self, bodies: Iterable[str]) -> set[int]:
        """The ids of the facts (all but the lazy ones) that any of the message texts
        ``bodies`` shows."""
        return self._search(bodies, self._eager, 0)

    def track(self, ids: Iterable[int]) -> None:
        """Add ``ids`` (eager facts) to those :meth:`shown_tracked` searches for."""
        tracked, seen = self._tracked, self._tracked_set
        for i in ids:
            if i not in seen:
                seen.add(i)
                tracked.append(i)

    def shown_tracked(self, bodies: Iterable[str]) -> set[int]:
        """Like :meth:`shown`, searching only for the :meth:`track`-ed facts: every
        tracked id that any of ``bodies`` shows is in the result (it may hold other
        ids, found shown by earlier searches of the same texts). For the prompts of
        a strategy, where only the facts the reference shows count."""
        return self._search(bodies, self._tracked, 1)

    def _search(self, bodies: Iterable[str], ids: list[int], slot: int) -> set[int]:
        """The facts each text shows, found once per (text, fact): each text's entry
        remembers how far into ``ids`` it was searched (``upto[slot]``); the union of
        what the texts show. A tracked id that the text was already searched for as an
        eager one (its position in ``_eager`` is below ``upto[0]``) is known: shown
        exactly when it is in ``present``.

        The texts are grouped by the ids they still need (a prompt's older texts need
        the few facts a turn adds, its new texts every fact); a large group is searched
        by one C-level pass per fact over its texts, a text needing many facts by one
        pass over them (:meth:`_scan_text`), a long prompt sorted out by C-level passes
        (:meth:`_classify_large`): a long run's prompts take no Python step per
        (text, fact), nor per text for a text already searched."""
        n = len(ids)
        bodies = bodies if isinstance(bodies, list) else list(bodies)
        if len(bodies) >= _LARGE:
            shown, groups = self._classify_large(bodies, n, slot)
        else:
            shown, groups = self._classify(bodies, n, slot)
        for (start, known), group in groups.items():
            new = ids[start:n]
            if slot and known:
                eager_at = self._eager_at
                new = [i for i in new if eager_at.get(i, known) >= known]
            members = list(group.values())
            if len(members) >= _GROUPED and len(members) >= len(new):
                _scan_texts(members, new, self.facts, self._probes)
            else:
                for entry in members:
                    self._scan_text(entry, new)
            for entry in members:
                entry[2][slot] = n
        return set().union(*shown)

    def _classify(self, bodies: list[str], n: int, slot: int
                  ) -> tuple[list[set[int]], dict[tuple[int, int], dict[str, _Entry]]]:
        """The present ids of the texts of ``bodies`` (those to search, filled later),
        and the texts to search grouped by (first id to search, eager ids known); each
        text known to show every tracked id is marked searched."""
        get = self._texts.get
        # a text searched for every eager fact knows every tracked one (tracked ids are
        # eager ids): the common case, a text of this turn's reference prompt
        all_eager = len(self._eager) if slot else -1
        shown: list[set[int]] = []
        groups: dict[tuple[int, int], dict[str, _Entry]] = {}
        for body in bodies:
            entry = get(body)
            if entry is None:
                entry = self._entry(body)
            present, upto = entry[1], entry[2]
            if upto[slot] < n:
                if upto[0] == all_eager:
                    upto[1] = n
                else:
                    key = (upto[slot], upto[0] if slot else 0)
                    group = groups.get(key)
                    if group is None:
                        group = groups[key] = {}
                    group[entry[0]] = entry
                    shown.append(present)
                    continue
            if present:
                shown.append(present)
        return shown, groups

    def _classify_large(self, bodies: list[str], n: int, slot: int
                        ) -> tuple[list[set[int]], dict[tuple[int, int], dict[str, _Entry]]]:
        """What :meth:`_classify` gives, by C-level passes over the texts (a long run's
        prompt: most texts need the same few new facts, or none)."""
        entries = list(map(self._texts.get, bodies))
        if None in entries:
            entries = [e if e is not None else self._entry(b)
                       for e, b in zip(entries, bodies, strict=True)]
        uptos = list(map(_UPTO, entries))
        starts = list(map(itemgetter(slot), uptos))
        todo = list(compress(range(len(entries)), map(n.__gt__, starts)))
        groups: dict[tuple[int, int], dict[str, _Entry]] = {}
        if todo:
            known = list(map(_FIRST, uptos))
            if slot:
                done = len(self._eager)
                for k in compress(todo, map(done.__eq__, map(known.__getitem__, todo))):
                    uptos[k][1] = n
                todo = list(compress(todo, map(done.__ne__, map(known.__getitem__, todo))))
                keys = list(zip(starts, known, strict=True))
            else:
                keys = list(zip(starts, repeat(0), strict=False))
            for key, group in groupby(sorted(todo, key=keys.__getitem__), keys.__getitem__):
                grouped = list(map(entries.__getitem__, group))
                texts = list(map(_FIRST, grouped))
                groups[key] = dict(zip(texts, grouped, strict=True))
        return list(map(_PRESENT, entries)), groups

    def _scan_text(self, entry: _Entry, new: list[int]) -> None:
        """Add to ``entry``'s present ids those of ``new`` its text shows."""
        text, present, _upto, _lazy, symbols = entry
        find, probes, facts = text.find, self._probes, self.facts
        if len(new) >= _MANY:  # one C-level pass over the facts' first probes
            first, alt = self._first_probes, self._has_alt
            ats = list(map(find, map(first.__getitem__, new)))
            hits = dict(compress(zip(new, ats, strict=True), map((-1).__lt__, ats)))
            for i in compress(new, map(alt.__getitem__, new)):
                if i not in hits and probes[i][1] in text:  # type: ignore[operator]
                    hits[i] = -1
            present.update([i for i, at in hits.items()
                            if i not in present and fact_present(facts[i], text, symbols, at)])
            return
        candidates = [(i, at) for i in new
                      if i not in present and ((at := find((p := probes[i])[0])) >= 0
                                               or (p[1] is not None and p[1] in text))]
        present.update(i for i, at in candidates
                       if fact_present(facts[i], text, symbols, at))

    def shows(self, bodies: Sequence[str], ids: Iterable[int]) -> set[int]:
        """The ids among ``ids`` (of any facts, lazy ones included) that any of the
        message texts ``bodies`` shows; each text is searched for a fact at most once."""
        wanted = list(ids)
        if not wanted:
            return set()
        entries: list[_Entry] = []
        make = self._entry

        def made() -> Iterator[_Entry]:
            for body in reversed(bodies):  # the newest text first, made as reached
                entry = make(body)
                entries.append(entry)
                yield entry

        later = made()  # one for the call: a text is made once, for the first id reaching it
        out = set()
        facts, probes = self.facts, self._probes
        searched = 0
        for i in wanted:
            needle, other = probes[i]
            # the texts made for earlier ids, then the next ones
            for text, present, _upto, lazy, symbols in chain(entries, later):
                if i in present:
                    hit = True
                else:
                    hit = lazy.get(i)
                    if hit is None:
                        at = text.find(needle)
                        hit = lazy[i] = ((at >= 0 or (other is not None and other in text))
                                         and fact_present(facts[i], text, symbols, at))
                        searched += 1
                if hit:
                    out.add(i)
                    break
        self._lazy_results += searched
        if self._lazy_results > LAZY_RESULTS:
            self._forget_lazy()
        return out

    def _forget_lazy(self) -> None:
        """Drop every remembered (text, lazy fact) answer: a long run asks each turn
        about new facts in texts that stay, so they would grow as turns x texts (one
        asked again is searched again, to the same answer)."""
        for generation in (self._texts, self._old_texts):
            for entry in generation.values():
                entry[3].clear()
        self._lazy_results = 0


# a path is tried only where a run of path characters starts: from inside one it would
# fail as it failed at the run's start (same matches, without the quadratic retries)
_PATH = re.compile(r"(?<![\w.\-])(?:[\w.\-]*/)+[\w.\-]+"
                   r"|\b[\w\-]+\.(?:py|pyi|js|ts|json|txt|md|rst|cfg|toml|ya?ml|ini|c|h|cpp|rs|go|java|rb|sh|csv|log|html|css|xml|sql)\b")
_NAME = re.compile(r"(?<![\w\-])[A-Za-z_][\w]*(?:[\-.][A-Za-z_][\w]*)*[?!]?")
_NUMBER = re.compile(r"(?<![\w.])\d{3,}(?![\w])")
_QUOTED = re.compile(r"\"([^\"\\\n]{3,100})\"|'([^'\\\n]{3,100})'")


_CAMEL = re.compile(r"[a-z][A-Z]")


def _is_name(word: str) -> bool:
    if len(word) < 4:
        return False
    core = word.rstrip("?!")
    return ("_" in core.strip("_") or "-" in core or "." in core
            or _CAMEL.search(core) is not None)


def identifiers(text: str) -> list[str]:
    """The identifiers ``text`` uses, in order, without repeats: file paths, names
    (with ``_``, ``-``, ``.`` or camelCase, 4+ characters), numbers of 3+ digits and
    quoted strings (3-100 characters)."""
    found = [p.strip(".") for p in _PATH.findall(text)]  # findall: no match objects
    # a word of letters in one case has no "_", "-", "." nor camelCase: not a name
    found.extend([w for w in _NAME.findall(text) if len(w) >= 4 and not (
        w.isalpha() and (w.islower() or w.isupper())) and _is_name(w)])
    found.extend(_NUMBER.findall(text))
    found.extend([(a or b).strip() for a, b in _QUOTED.findall(text)])
    return list(dict.fromkeys(f for f in found if len(f) >= 3))


FIRST_SEEN_SCAN = 256  # see NeededFacts._find


class _Words:
    """The distinct words (maximal runs of ``\\w``) of a run's texts, in the order they
    first occur, as UTF-8 joined by ``"\\x00"``, each with the index of the first text
    holding it: about the run's vocabulary, not a copy of the run.

    An occurrence of a text ``x`` lies in a text ``t`` only if each word of ``x`` lies
    inside a word of ``t`` (``\\w`` is a property of one character), so the first text
    with a word containing a word of ``x`` is a lower bound of where ``x`` first occurs,
    and where it first occurs when ``x`` is one word: an exact necessary condition."""

    def __init__(self, parts: Sequence[str]) -> None:
        seen: set[str] = set()
        words: list[str] = []
        starts, where = array("q"), array("l")
        at = 0
        for k, part in enumerate(parts):
            fresh = [w for w in dict.fromkeys(_WORD.findall(part)) if w not in seen]
            seen.update(fresh)
            words.extend(fresh)
            for w in fresh:
                starts.append(at)
                at += len(w.encode()) + 1
            where.extend(repeat(k, len(fresh)))
        self.text = "\x00".join(words).encode()
        self.starts, self.where = starts, where

    def first(self, word: str) -> int | None:
        """The index of the first text with a word containing ``word`` (one or more
        ``\\w`` characters), or None."""
        at = self.text.find(word.encode())
        return None if at < 0 else self.where[bisect_right(self.starts, at) - 1]


class NeededFacts:
    """The needed facts of each turn of one run.

    ``head`` is the text before the first turn (system prompt, mission...);
    ``turns[k]`` is ``(assistant_text, feedback_text)`` of turn k+1. The needed
    facts of the prompt for turn *n* are the identifiers of turn *n*'s assistant
    text whose first occurrence in the run is in the feedback of a turn before *n*.
    """

    def __init__(self, head: str, turns: Sequence[tuple[str, str]]) -> None:
        self.assistant = [a for a, _ in turns]
        # the run's texts in order, and what each is: no joined copy of the run (it was
        # as large as the run's text, and 4 bytes a character with one emoji in it)
        self._parts = [head]
        self._kinds: list[Any] = ["head"]
        for k, (assistant, feedback) in enumerate(turns, 1):
            self._parts += (assistant, feedback)
            self._kinds += (("assistant", k), ("feedback", k))
        self._first: dict[str, Any] = {}
        # characters the plain scans went through; past FIRST_SEEN_SCAN times the run's
        # text, its words are indexed (_Words) and the scans start where they can first hit
        self._ends = list(accumulate([len(p) + 1 for p in self._parts]))
        self._scanned = 0
        self._words: _Words | None = None

    def _first_seen(self, ident: str) -> Any:
        """What holds the first occurrence of ``ident`` in the run's texts joined by
        ``"\\x00"`` (the part it starts in), or ``"-"``."""
        where = self._first.get(ident)
        if where is None:
            where = self._first[ident] = self._find(ident)
        return where

    def _find(self, ident: str) -> Any:
        if "\x00" in ident:  # it may span parts: search them joined, as they are
            at = "\x00".join(self._parts).find(ident)
            if at < 0:
                return "-"
            for part, kind in zip(self._parts, self._kinds, strict=True):
                if at <= len(part):
                    return kind
                at -= len(part) + 1
        low = 0
        if self._words is None and self._scanned > FIRST_SEEN_SCAN * self._ends[-1]:
            self._words = _Words(self._parts)
        if self._words is not None:
            runs = _WORD.findall(ident)
            if runs:
                bounds = list(map(self._words.first, runs))
                if None in bounds:  # a word of it is in no part: neither is it
                    return "-"
                if len(runs) == 1 and runs[0] == ident:  # one word: its first part
                    return self._kinds[bounds[0]]  # type: ignore[index]
                low = max(bounds)  # type: ignore[type-var]
        # the first part holding it holds the first occurrence: found by a C-level scan
        # (``ident in part`` for each part, no Python step per part)
        parts = self._parts if not low else islice(self._parts, low, None)
        at = next(compress(count(low), map(operator.contains, parts, repeat(ident))), None)
        self._scanned += (self._ends[-1] if at is None else self._ends[at]) - (
            self._ends[low - 1] if low else 0)
        return "-" if at is None else self._kinds[at]

    def for_turn(self, n: int) -> list[Fact]:
        """The needed facts of the prompt for turn ``n`` (1-based)."""
        if not 1 <= n <= len(self.assistant):
            return []
        out = []
        for ident in identifiers(self.assistant[n - 1]):
            where = self._first_seen(ident)
            if isinstance(where, tuple) and where[0] == "feedback" and where[1] < n:
                out.append(Fact("needed", ident))
        return out
