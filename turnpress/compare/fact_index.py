"""Which facts each distinct message text of a run shows, searched once per (text, fact).

``compare`` scores every prompt of every strategy against the facts of
``compare/retention.py``; most of a long run's prompts are the same texts turn after
turn, so :class:`FactIndex` remembers, per distinct text, which facts it was searched
for and which it shows, and :class:`RunFacts` gives each prompt's facts as ids of the
index, made once per run. Both give exactly what :func:`~turnpress.compare.retention.fact_present`
gives on each text.
"""

from __future__ import annotations

import operator
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from itertools import accumulate, compress, count, groupby, repeat
from operator import attrgetter

from turnpress.compare.retention import (
    Fact,
    fact_present,
    fact_probes,
    history_facts,
    name_only,
    tool_call_fact,
)
from turnpress.core.compression import error_message
from turnpress.core.model import Turn

__all__ = ["JOIN_CHARS", "LAZY_RESULTS", "TEXT_CHARS", "FactIndex", "RunFacts"]

TEXT_CHARS = 2_000_000  # message texts from which a FactIndex starts a generation (see next_turn)
LAZY_RESULTS = 100_000  # (text, lazy fact) answers a FactIndex keeps (see shows)
JOIN_CHARS = 65_536  # characters of texts _scan_texts joins at once (its copy's bound)
_NONE: frozenset[int] = frozenset()  # the ids an entry shows until it shows one


class _Entry:
    """What a :class:`FactIndex` knows of one text (one per distinct message text of a
    run, so small: its sets and dict are made when first needed).

    ``text``: the text without the excluded parts; ``present``: the ids found shown
    (:data:`_NONE` until one is); ``eager`` / ``tracked``: how far into the eager and
    the tracked ids it was searched; ``memo``: ``{lazy id: shown}`` and, under
    ``(name, kind)`` keys, the symbols known shown or not (``fact_present``'s
    ``symbols``), or None."""

    __slots__ = ("eager", "memo", "present", "serial", "text", "tracked")

    def __init__(self, text: str, serial: int) -> None:
        self.text = text
        self.serial = serial
        self.present: set[int] | frozenset[int] = _NONE
        self.eager = self.tracked = 0
        self.memo: dict[object, bool] | None = None

    def add(self, ids: Iterable[int]) -> None:
        """Mark ``ids`` shown."""
        if self.present is _NONE:
            self.present = set(ids)
        else:
            self.present.update(ids)  # type: ignore[union-attr]

    def answers(self) -> dict[object, bool]:
        """The memo, made when first needed."""
        memo = self.memo
        if memo is None:
            memo = self.memo = {}
        return memo


_TEXT, _PRESENT, _EAGER = attrgetter("text"), attrgetter("present"), attrgetter("eager")
_SERIAL = attrgetter("serial")
_SEARCHED = (_EAGER, attrgetter("tracked"))  # per slot: how far an entry was searched
_SLOTS = ("eager", "tracked")
_LARGE = 256  # texts from which a prompt's texts are sorted out by C-level passes
_MANY = 32  # facts from which one text is searched for them by one C-level pass
_GROUPED = 8  # texts needing the same facts, from which one pass per fact searches them


class _Joined:
    """Texts joined by NUL, searched by ``str.find`` on the whole: a Python step per
    text holding a needle, none per text searched."""

    __slots__ = ("joined", "starts", "texts")

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.joined = "\x00".join(texts)
        self.starts = list(accumulate(map((1).__add__, map(len, texts)), initial=0))

    def first_at(self, needle: str) -> dict[int, int]:
        """``{k: where needle first occurs in text k}``, for the texts holding it, in
        order."""
        texts = self.texts
        if "\x00" in needle or not needle:  # a match could span texts: each text alone
            ats = list(map(str.find, texts, repeat(needle)))
            return dict(compress(enumerate(ats), map((-1).__lt__, ats)))
        joined, starts, hits = self.joined, self.starts, {}
        last = len(texts) - 1
        pos = joined.find(needle)
        while pos >= 0:
            k = bisect_right(starts, pos) - 1
            hits[k] = pos - starts[k]
            if k == last:
                break
            pos = joined.find(needle, starts[k + 1])
        return hits


def _scan_texts(entries: Sequence[_Entry], new: Sequence[int], facts: Sequence[Fact],
                probes: Sequence[tuple[str, str | None]]) -> None:
    """Add to each of ``entries``' present ids those of ``new`` its text shows: each
    fact's probes searched in the texts joined (:class:`_Joined`), ``fact_present`` run
    on the texts holding one, with where the first probe first occurs (-1: only the
    second one occurs). The texts are joined :data:`JOIN_CHARS` at a time (one long
    run's prompt joined whole was a copy of all its text, in memory at once)."""
    texts = list(map(_TEXT, entries))
    for lo, hi in _spans(texts, JOIN_CHARS):
        joined = _Joined(texts[lo:hi])
        for i in new:
            first, other = probes[i]
            hits = joined.first_at(first)
            if other is not None:
                for k in joined.first_at(other):
                    hits.setdefault(k, -1)
            for k, at in hits.items():
                entry = entries[lo + k]
                if i not in entry.present and fact_present(facts[i], entry.text,
                                                           entry.answers(), at):  # type: ignore[arg-type]
                    entry.add((i,))


def _spans(texts: Sequence[str], limit: int) -> list[tuple[int, int]]:
    """``(start, end)`` of consecutive runs of ``texts`` of at most ``limit`` characters
    in all (a longer text is a run of its own)."""
    spans, start, size = [], 0, 0
    for k, text in enumerate(texts):
        if k > start and size + len(text) > limit:
            spans.append((start, k))
            start, size = k, 0
        size += len(text) + 1
    if start < len(texts):
        spans.append((start, len(texts)))
    return spans


_FIRST_CHUNK = 16  # texts _first_showing searches by one C-level pass first (then twice as many)


def _first_showing(entries: Sequence[_Entry], i: int, fact: Fact,
                   probe: tuple[str, str | None], done: set[int]) -> _Entry | None:
    """The first of ``entries`` whose text shows fact ``i`` (known shown, or found so by
    ``fact_present``), or None; the serials of the entries up to it (of all, when none
    shows it) are added to ``done``. Searched in chunks of doubling length, each by
    C-level passes (its probes' ``str.find``), ``fact_present`` run only on the texts
    holding a probe: no Python step per text searched."""
    needle, other = probe
    start, size = 0, _FIRST_CHUNK
    while start < len(entries):
        chunk = entries[start:start + size]
        texts = list(map(_TEXT, chunk))
        ats = list(map(str.find, texts, repeat(needle)))
        maybe = list(map((-1).__lt__, ats))
        if other is not None:
            maybe = list(map(operator.or_, maybe, map(str.__contains__, texts, repeat(other))))
        maybe = list(map(operator.or_, maybe, map(operator.contains, map(_PRESENT, chunk),
                                                   repeat(i))))
        for k in compress(range(len(chunk)), maybe):
            entry = chunk[k]
            if i in entry.present or fact_present(fact, texts[k], entry.answers(),  # type: ignore[arg-type]
                                                  ats[k]):
                done.update(map(_SERIAL, chunk[:k + 1]))
                return entry
        done.update(map(_SERIAL, chunk))
        start, size = start + size, size * 2
    return None


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
        self._serials = count()  # the serial of each new entry
        # lazy answers, kept by fact: id -> serials of the texts searched for it, and
        # of those found showing it (see shows)
        self._searched_for: dict[int, set[int]] = {}
        self._shown_by: dict[int, set[int]] = {}
        self._lazy_results = 0  # (text, fact) answers kept in those

    def ids(self, facts: Iterable[Fact], *, lazy: bool = False) -> list[int]:
        """The ids of ``facts``, adding the new ones (``lazy``: searched only on demand,
        by :meth:`shows`)."""
        out = []
        for f in facts:
            i = self._ids.get(f)
            if i is None:
                i = self._ids[f] = len(self.facts)
                self.facts.append(f)
                probe = fact_probes(f)
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
                entry = _Entry(text, next(self._serials))
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
        slot_name = _SLOTS[slot]
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
                setattr(entry, slot_name, n)
        return set().union(*map(_PRESENT, shown))

    def _classify(self, bodies: list[str], n: int, slot: int
                  ) -> tuple[list[_Entry], dict[tuple[int, int], dict[str, _Entry]]]:
        """The entries of the texts of ``bodies`` that show ids (or are to be searched),
        and the texts to search grouped by (first id to search, eager ids known); each
        text known to show every tracked id is marked searched."""
        get = self._texts.get
        # a text searched for every eager fact knows every tracked one (tracked ids are
        # eager ids): the common case, a text of this turn's reference prompt
        all_eager = len(self._eager) if slot else -1
        shown: list[_Entry] = []
        groups: dict[tuple[int, int], dict[str, _Entry]] = {}
        for body in bodies:
            entry = get(body)
            if entry is None:
                entry = self._entry(body)
            searched = entry.tracked if slot else entry.eager
            if searched < n:
                if entry.eager == all_eager:
                    entry.tracked = n
                else:
                    key = (searched, entry.eager if slot else 0)
                    group = groups.get(key)
                    if group is None:
                        group = groups[key] = {}
                    group[entry.text] = entry
                    shown.append(entry)
                    continue
            if entry.present:
                shown.append(entry)
        return shown, groups

    def _classify_large(self, bodies: list[str], n: int, slot: int
                        ) -> tuple[list[_Entry], dict[tuple[int, int], dict[str, _Entry]]]:
        """What :meth:`_classify` gives, by C-level passes over the texts (a long run's
        prompt: most texts need the same few new facts, or none)."""
        entries = list(map(self._texts.get, bodies))
        if None in entries:
            entries = [e if e is not None else self._entry(b)
                       for e, b in zip(entries, bodies, strict=True)]
        starts = list(map(_SEARCHED[slot], entries))
        todo = list(compress(range(len(entries)), map(n.__gt__, starts)))
        groups: dict[tuple[int, int], dict[str, _Entry]] = {}
        if todo:
            known = list(map(_EAGER, entries)) if slot else starts
            if slot:
                done = len(self._eager)
                for k in compress(todo, map(done.__eq__, map(known.__getitem__, todo))):
                    entries[k].tracked = n
                todo = list(compress(todo, map(done.__ne__, map(known.__getitem__, todo))))
                keys = list(zip(starts, known, strict=True))
            else:
                keys = list(zip(starts, repeat(0), strict=False))
            for key, group in groupby(sorted(todo, key=keys.__getitem__), keys.__getitem__):
                grouped = list(map(entries.__getitem__, group))
                texts = list(map(_TEXT, grouped))
                groups[key] = dict(zip(texts, grouped, strict=True))
        return entries, groups

    def _scan_text(self, entry: _Entry, new: list[int]) -> None:
        """Add to ``entry``'s present ids those of ``new`` its text shows."""
        text, present = entry.text, entry.present
        find, probes, facts = text.find, self._probes, self.facts
        if len(new) >= _MANY:  # one C-level pass over the facts' first probes
            first, alt = self._first_probes, self._has_alt
            ats = list(map(find, map(first.__getitem__, new)))
            hits = dict(compress(zip(new, ats, strict=True), map((-1).__lt__, ats)))
            for i in compress(new, map(alt.__getitem__, new)):
                if i not in hits and probes[i][1] in text:  # type: ignore[operator]
                    hits[i] = -1
            candidates = [(i, at) for i, at in hits.items() if i not in present]
        else:
            candidates = [(i, at) for i in new
                          if i not in present and ((at := find((p := probes[i])[0])) >= 0
                                                   or (p[1] is not None and p[1] in text))]
        if candidates:
            symbols = entry.answers()
            found = [i for i, at in candidates
                     if fact_present(facts[i], text, symbols, at)]  # type: ignore[arg-type]
            if found:
                entry.add(found)

    def shows(self, bodies: Sequence[str], ids: Iterable[int]) -> set[int]:
        """The ids among ``ids`` (of any facts, lazy ones included) that any of the
        message texts ``bodies`` shows; each text is searched for a fact at most once.

        What is known of a fact is kept by the fact, as the serials of the texts searched
        for it and of those found showing it: a prompt's texts all searched already, or
        one of them known to show it, is settled by a C-level set operation, and only
        its texts not yet searched (its newest ones, mostly) are searched, newest first
        (a long run's prompt takes no Python step per (fact, text) already answered)."""
        wanted = list(ids)
        if not wanted:
            return set()
        entries = list(map(self._texts.get, reversed(bodies)))  # the newest text first
        if None in entries:
            entries = [e if e is not None else self._entry(b)
                       for e, b in zip(entries, reversed(bodies), strict=True)]
        serials = list(map(_SERIAL, entries))
        prompt = set(serials)
        out = set()
        facts, probes = self.facts, self._probes
        searched_for, shown_by = self._searched_for, self._shown_by
        searched = 0
        for i in wanted:
            known = shown_by.get(i)
            if known is not None and not known.isdisjoint(prompt):
                out.add(i)
                continue
            done = searched_for.get(i)
            if done is None:
                done = searched_for[i] = set()
                todo = prompt
            else:
                todo = prompt - done
                if not todo:
                    continue
            flags = list(map(todo.__contains__, serials))
            # each text once (a prompt may hold one twice), newest first
            unsearched = list(dict(zip(compress(serials, flags), compress(entries, flags),
                                       strict=True)).values())
            before = len(done)
            hit = _first_showing(unsearched, i, facts[i], probes[i], done)
            searched += len(done) - before
            if hit is not None:
                shown_by.setdefault(i, set()).add(hit.serial)
                out.add(i)
        self._lazy_results += searched
        if self._lazy_results > LAZY_RESULTS:
            self._forget_lazy()
        return out

    def _forget_lazy(self) -> None:
        """Drop every remembered (text, lazy fact) answer, and what the texts' symbols
        are known to show: a long run asks each turn about new facts in texts that stay,
        so they would grow as turns x texts (one asked again is searched again, to the
        same answer)."""
        self._searched_for, self._shown_by = {}, {}
        for generation in (self._texts, self._old_texts):
            for entry in generation.values():
                entry.memo = None
        self._lazy_results = 0


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
                fact = tool_call_fact(c.name, c.args)
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
