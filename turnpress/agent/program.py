"""Find the program in an LLM reply."""

from __future__ import annotations

import re

__all__ = ["extract_program"]

_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+\-]*)[^\n]*\n(.*?)(?:^[ \t]*```[ \t]*$|\Z)",
                    re.DOTALL | re.MULTILINE)
_LISP_TAGS = frozenset({"clojure", "clj", "lisp", "ptc-lisp", "ptc_lisp", "edn"})


def extract_program(reply: str) -> str:
    """The program in ``reply``.

    The first fenced block tagged ``clojure`` (or ``clj``, ``lisp``, ``ptc-lisp``)
    wins; else the first untagged fenced block; else the whole reply. A block whose
    closing fence is missing (a cut-off reply) runs to the end of the reply.
    Blocks tagged with another language are never taken. The result is stripped.
    """
    untagged: str | None = None
    for match in _FENCE.finditer(reply):
        tag, body = match.group(1).lower(), match.group(2)
        if tag in _LISP_TAGS:
            return body.strip()
        if not tag and untagged is None:
            untagged = body
    if untagged is not None:
        return untagged.strip()
    return reply.strip()
