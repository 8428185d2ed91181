"""The needed facts of each turn of a run: the identifiers the agent's next message
used that first appeared in earlier feedback (DESIGN §11, needed-fact recall).

:func:`identifiers` says what a message uses; :class:`NeededFacts` finds where each
first occurs in the run's texts, exactly as a search of the texts joined by NUL
would, without a joined copy.
"""

from __future__ import annotations

import operator
import re
from array import array
from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate, compress, count, islice, repeat
from typing import Any

from turnpress.compare.retention import Fact

__all__ = ["FIRST_SEEN_SCAN", "NeededFacts", "identifiers"]

_WORD = re.compile(r"\w+")

# a path is tried only where a run of path characters starts: from inside one it would
# fail as it failed at the run's start (same matches, without the quadratic retries)
_PATH = re.compile(r"(?<![\w.\-])(?:[\w.\-]*/)+[\w.\-]+"
                   r"|\b[\w\-]+\.(?:py|pyi|js|ts|json|txt|md|rst|cfg|toml|ya?ml|ini|c|h|cpp|rs|go|java|rb|sh|csv|log|html|css|xml|sql)\b")
# the first character before the lookbehind (checking the one before it): the search
# skips to the characters a match can start with (same matches, a C-level skip)
_NAME = re.compile(r"[A-Za-z_](?<![\w\-][A-Za-z_])\w*(?:[\-.][A-Za-z_]\w*)*[?!]?")
_NUMBER = re.compile(r"\d(?<![\w.]\d)\d{2,}(?!\w)")
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
