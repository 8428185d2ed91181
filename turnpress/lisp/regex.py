r"""The few regular-expression literals PTC-Lisp accepts, implemented in linear time.

A general regex engine can backtrack for ever on a hostile pattern, and Python's
``re`` cannot be interrupted, so PTC-Lisp has no general regular expressions. The
reader accepts ``#"..."`` only when the pattern is one of these shapes, all of
which are matched here without ``re``:

* a literal text (``#","``, ``#"\|"``, ``#"\n"``) -- read as a plain string;
* ``#"\s+"`` -- runs of whitespace;
* a literal with optional whitespace around it: ``#"\s*,\s*"``, ``#",\s*"``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Regex", "parse_regex"]

_META = set(".[]{}()*+?^$|")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f"}
_WS = "\\s*"


@dataclass(frozen=True)
class Regex:
    r"""A supported non-literal pattern: whitespace runs, or ``literal`` with whitespace.

    ``ws_runs`` is ``#"\s+"``; otherwise the pattern is ``literal`` preceded by
    ``\s*`` when ``lead_ws`` and followed by ``\s*`` when ``trail_ws``.
    """

    source: str
    literal: str = ""
    lead_ws: bool = False
    trail_ws: bool = False
    ws_runs: bool = False

    def __str__(self) -> str:
        return self.source

    def __hash__(self) -> int:
        # the same hash as a regex loaded from a trace (core.codec.RegexValue), which
        # is equal to it: sets and map keys holding regexes survive save and load
        return hash(("regex", self.source))

    def split(self, s: str) -> list[str]:
        """Split ``s`` at every match (before Clojure's trailing-empty removal)."""
        if self.ws_runs:
            parts = s.split()
            if s[:1].isspace():
                parts.insert(0, "")
            if s[-1:].isspace():
                parts.append("")
            return parts
        parts = s.split(self.literal)
        last = len(parts) - 1
        for i, part in enumerate(parts):
            if self.lead_ws and i < last:
                part = part.rstrip()
            if self.trail_ws and i > 0:
                part = part.lstrip()
            parts[i] = part
        return parts

    def sub(self, s: str, replacement: str) -> str:
        """Replace every match in ``s`` with ``replacement``."""
        return replacement.join(self.split(s))


def _unescape_literal(text: str) -> str | None:
    """The literal a pattern stands for, or None if it uses regex operators."""
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            if i + 1 >= len(text):
                return None
            nxt = text[i + 1]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
            elif nxt.isalnum():
                return None  # \s \d \w \b ... are classes, not literals
            else:
                out.append(nxt)
            i += 2
            continue
        if ch in _META:
            return None
        out.append(ch)
        i += 1
    return "".join(out)


def parse_regex(pattern: str) -> str | Regex | None:
    """A plain string for a literal pattern, a :class:`Regex`, or None if unsupported."""
    literal = _unescape_literal(pattern)
    if literal is not None and literal:
        return literal
    if pattern == "\\s+":
        return Regex(pattern, ws_runs=True)
    core = pattern
    lead = core.startswith(_WS)
    if lead:
        core = core[len(_WS):]
    trail = core.endswith(_WS) and not core.endswith("\\" + _WS)
    if trail:
        core = core[: -len(_WS)]
    literal = _unescape_literal(core)
    if (lead or trail) and literal:
        return Regex(pattern, literal, lead, trail)
    return None
