"""What consecutive prompts of one strategy share, so each is counted from its changes.

The prompts of one run under one strategy mostly start with the messages of the
prompt before (the whole of it, for an append-only strategy). A :class:`PromptTrack`
keeps a strategy's previous prompt as counted: its roles, message bodies and
:class:`~turnpress.core.tokens.TokenizedPrompt`. The next prompt's leading
messages with the same role and body are recognised by comparing the two lists
(in C, strings by identity first), and their counted segments, running token
totals and prefix digests are reused instead of looked up again. The leading
messages equal to the previous prompt's (strategies hand out the same message
dicts again for what did not change) need neither their bodies made nor their
shape checked again: :meth:`PromptTrack.same`, which compares them with copies taken
when they were counted.

The previous prompt is kept without its token ids (:func:`without_tokens`): the next
prompt takes its leading segments from it, and only the prompt-cache model reads token
ids, of the messages after the longest prefix it has seen, which that prompt had (so
an append-only strategy's track does not keep the tokens of the whole run; the
segments of the new messages come from the counter, with their ids).
"""

from __future__ import annotations

import operator
from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from turnpress.core.tokens import Segment, TokenizedPrompt, common_prefix_length

__all__ = ["PromptTrack", "roles", "without_tokens"]


LIGHT_BYTES = 512
"""Segments with more packed token ids than this are kept without them by a track."""


def without_tokens(prompt: TokenizedPrompt, earlier: TokenizedPrompt | None = None,
                   start: int = 0) -> TokenizedPrompt:
    """A copy of ``prompt`` whose segments of more than :data:`LIGHT_BYTES` of token ids
    are copies without them (count and digest kept); the leading segments it took from
    ``earlier`` (a result of this function) are that one's, already light (the first
    ``start`` of them, the caller knows)."""
    segments = prompt.segments
    k = common_prefix_length(segments, earlier.segments, start) if earlier is not None else 0
    return prompt.with_segments(
        (earlier.segments[:k] if earlier is not None and k else ()) + tuple(
            Segment(s.count, s.digest, None, None)
            if s.tokens is not None and len(s.tokens) > LIGHT_BYTES else s
            for s in segments[k:]))

_ROLE = operator.itemgetter("role")


def roles(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """The role of each message."""
    return list(map(_ROLE, messages))


class PromptTrack:
    """One strategy's previous prompt in a run, as counted."""

    __slots__ = ("blocks", "bodies", "messages", "prompt", "roles")

    def __init__(self) -> None:
        self.roles: list[str] = []
        self.bodies: list[str] = []
        self.messages: Sequence[Mapping[str, Any]] = []
        self.prompt: TokenizedPrompt | None = None
        # the content blocks of its first i messages in the Anthropic rendering, when
        # counted (the anthropic cache model: :func:`~turnpress.compare.counting.block_counts`)
        self.blocks: array[int] | None = None

    def same(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """How many leading ``messages`` equal the previous prompt's messages as they
        were when counted (a copy of each is kept: a strategy that changes a dict it
        handed out, against the contract, must not pass for unchanged). Compared in C;
        unchanged values are the same string objects, so mostly by identity."""
        if self.prompt is None or not messages:
            return 0
        return common_prefix_length(messages, self.messages)

    def shared(self, roles: Sequence[str], bodies: Sequence[str], start: int = 0) -> int:
        """How many leading messages (given by their ``roles`` and ``bodies``) are the
        previous prompt's, role and body (the first ``start`` are, the caller knows:
        the :meth:`same` ones)."""
        if self.prompt is None:
            return 0
        return min(common_prefix_length(bodies, self.bodies, start),
                   common_prefix_length(roles, self.roles, start))

    def prefix(self, roles: Sequence[str], bodies: Sequence[str], start: int = 0
               ) -> tuple[TokenizedPrompt, int] | None:
        """``(previous prompt, shared messages)`` for ``TokenCounter.tokenize``, or None
        when nothing is shared (the first ``start`` are, the caller knows)."""
        k = self.shared(roles, bodies, start)
        return (self.prompt, k) if k and self.prompt is not None else None

    def matches(self, roles: Sequence[str], bodies: Sequence[str],
                points: Iterable[tuple[int, int | None]] = ()) -> bool:
        """Whether the previous prompt has exactly these ``roles``, ``bodies`` and
        breakpoints ``points`` (then counting them again would give the same prompt).
        Compared in C, strings by identity first. The track keeps that prompt without
        its token ids, so the caller supplies the prompt as counted."""
        prompt = self.prompt
        if prompt is None or len(bodies) != len(self.bodies) or bodies != self.bodies \
                or roles != self.roles:
            return False
        return [(p.index, p.offset) for p in prompt.breakpoints] == list(points)

    def update(self, roles: list[str], bodies: list[str], prompt: TokenizedPrompt,
               messages: Sequence[Mapping[str, Any]] = (), same: int = 0,
               light: TokenizedPrompt | None = None, reused: int = 0) -> None:
        """Remember the prompt just counted (and a copy of its ``messages``, for
        :meth:`same`; the first ``same`` equal the previous prompt's, whose copies are
        kept). ``light``: ``prompt`` already kept without its token ids by another
        track (the reference's, when this prompt is its prompt); ``reused``: how many
        leading segments ``prompt`` took from this track's previous prompt."""
        kept = self.messages
        if type(kept) is list:  # this track's own copies: cut and extended in place
            del kept[same:]
        else:
            kept = list(kept[:same])
        kept.extend(map(dict, messages[same:]))
        if light is None:
            light = without_tokens(prompt, self.prompt, reused)
        self.roles, self.bodies, self.prompt, self.messages = roles, bodies, light, kept
