"""Shared oracle for the needed-fact tests: where an identifier first occurs in a run's
texts, found by the plain search NeededFacts replaces (the texts joined by NUL)."""

from __future__ import annotations


def joined_first(parts: list[str], kinds: list[object], ident: str) -> object:
    """The kind of the part of ``parts`` (joined by ``"\\x00"``) where ``ident`` first
    occurs, or ``"-"``: what ``NeededFacts._find`` must give."""
    at = "\x00".join(parts).find(ident)
    if at < 0:
        return "-"
    for part, kind in zip(parts, kinds, strict=True):
        if at <= len(part):
            return kind
        at -= len(part) + 1
    raise AssertionError("unreachable: the offset lies in some part")
