"""Find the program in an LLM reply."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["NO_PROGRAM", "ReplyProgram", "extract_program", "find_program"]

_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+\-]*)[^\n]*\n(.*?)(?:^[ \t]*```[ \t]*$|\Z)",
                    re.DOTALL | re.MULTILINE)
_LISP_TAGS = frozenset({"clojure", "clj", "lisp", "ptc-lisp", "ptc_lisp", "edn"})

NO_PROGRAM = "no_program"
"""``Failure.reason`` of a turn whose reply holds no program (empty, or an empty block)."""


@dataclass(frozen=True)
class ReplyProgram:
    """The program of a reply and where it came from.

    ``fenced``: it is the body of a fenced block (``clojure``-tagged or untagged);
    when false the whole reply is the program. ``other_tags``: the languages of
    the fenced blocks that were not taken (``python``...). ``ignored``: how many more
    blocks of the kind that was taken (``clojure``-tagged, or untagged) the reply
    holds: only the first runs.
    """

    program: str
    fenced: bool
    other_tags: tuple[str, ...] = ()
    ignored: int = 0

    def ignored_note(self) -> str | None:
        """What to tell the user and the agent when blocks were not run, else None."""
        if not self.ignored:
            return None
        return (f"the reply has {self.ignored + 1} ```clojure blocks; only the first ran: "
                f"put the whole program in one block")

    def explain(self, message: str) -> str:
        """``message`` (a failure of the program), saying first, when the reply had no
        block, that the whole reply ran as the program, and after it, when the reply had
        more blocks, that they did not run (:meth:`ignored_note`)."""
        if self.fenced:
            note = self.ignored_note()
            return f"{message} ({note})" if note else message
        others = ", ".join(f"```{tag}" for tag in self.other_tags)
        found = f" (only {others})" if others else ""
        return (f"the reply has no ```clojure code block{found}, so the whole reply ran as "
                f"the program: {message}. Reply with exactly one ```clojure block")


def find_program(reply: str) -> ReplyProgram:
    """The program in ``reply``, as :func:`extract_program` finds it, whether it came
    from a fenced block, and how many more blocks of its kind were not taken."""
    lisp: list[str] = []
    untagged: list[str] = []
    others: list[str] = []
    for match in _FENCE.finditer(reply):
        tag, body = match.group(1).lower(), match.group(2)
        if tag in _LISP_TAGS:
            lisp.append(body)
        elif not tag:
            untagged.append(body)
        elif tag not in others:
            others.append(tag)
    taken = lisp or untagged
    if taken:
        return ReplyProgram(taken[0].strip(), True, ignored=len(taken) - 1)
    return ReplyProgram(reply.strip(), False, tuple(others))


def extract_program(reply: str) -> str:
    """The program in ``reply``.

    The first fenced block tagged ``clojure`` (or ``clj``, ``lisp``, ``ptc-lisp``)
    wins; else the first untagged fenced block; else the whole reply. A block whose
    closing fence is missing (a cut-off reply) runs to the end of the reply.
    Blocks tagged with another language are never taken, and neither are the second
    and later blocks (:attr:`ReplyProgram.ignored` counts them; the run tells the user
    and, when the turn fails, the agent). The result is stripped.
    """
    return find_program(reply).program
