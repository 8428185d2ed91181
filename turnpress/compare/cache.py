"""Provider prompt-cache models: how many tokens of each prompt a provider serves from cache.

One model instance follows one *run* (the prompts of one trace under one
strategy, in order). For each prompt, :meth:`CacheModel.account` returns a
:class:`CacheUsage`: ``cached`` tokens read from cache (billed at the cached
price) and ``written`` tokens stored for later (billed at the cache-write price;
Anthropic only). The rest is ordinary input.

- ``openai`` — automatic: a prompt of at least 1024 tokens reads the longest
  token prefix it shares with an earlier prompt of the run, rounded down to a
  multiple of 128; as on the API, a hit is at least 1024 tokens (1024, 1152, ...).
- ``anthropic`` — explicit: the strategy's Anthropic rendering places up to four
  ``cache_control`` breakpoints; a prefix up to a breakpoint of at least 1024
  tokens is written the first time (1.25x input) and read when a later prompt
  repeats it, either at one of its own breakpoints or at a message boundary
  before its last breakpoint (the API looks back over earlier block boundaries).
- ``none`` — nothing is cached.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import ClassVar

from turnpress.core.tokens import Segment, TokenizedPrompt, common_prefix_length

__all__ = [
    "CACHE_MODELS",
    "AnthropicCache",
    "CacheModel",
    "CacheUsage",
    "NoCache",
    "OpenAICache",
    "cache_model_names",
    "new_cache_model",
]


@dataclass(frozen=True)
class CacheUsage:
    """What the cache did for one prompt: tokens read from it and tokens written to it."""

    cached: int = 0
    written: int = 0


class CacheModel:
    """The cache of one provider over one run; subclasses implement :meth:`account`."""

    name: ClassVar[str] = ""

    def account(self, prompt: TokenizedPrompt) -> CacheUsage:
        """Record that ``prompt`` was sent and return its cache usage."""
        raise NotImplementedError


class NoCache(CacheModel):
    """No prompt caching: every token is billed as input."""

    name = "none"

    def account(self, prompt: TokenizedPrompt) -> CacheUsage:
        """Always nothing cached."""
        return CacheUsage()


class OpenAICache(CacheModel):
    """OpenAI's automatic prefix cache.

    ``min_prompt``: prompts shorter than this are never served from cache;
    ``step``: cached lengths are rounded down to a multiple of it; ``min_cached``:
    the smallest hit (the API's first cache block).
    """

    name = "openai"

    def __init__(self, *, min_prompt: int = 1024, step: int = 128,
                 min_cached: int = 1024) -> None:
        self.min_prompt = min_prompt
        self.step = step
        self.min_cached = min_cached
        # every whole-message prefix seen so far (its chain digest, b"" for the empty
        # prefix) -> the distinct messages that followed it, by digest
        self.after: dict[bytes, dict[bytes, Segment]] = {}
        # the same prefix -> the token sequences (packed) of the messages that followed
        # it, sorted; None once one of them has no tokens (a count-only tokenizer)
        self.sorted: dict[bytes, list[bytes] | None] = {}

    def shared_prefix(self, prompt: TokenizedPrompt) -> int:
        """The longest token prefix ``prompt`` shares with an earlier prompt of the run.

        Whole messages are matched through the prefix digests (a prefix seen means
        all its shorter prefixes were seen), then the next message is compared token
        by token with each message that followed the same prefix before.
        """
        return self._shared(prompt)[0]

    def _seen(self, prompt: TokenizedPrompt) -> int:
        """How many leading messages of ``prompt`` form a prefix seen before."""
        chain, after = prompt.chain, self.after
        lo, hi = 0, len(chain)  # the first k messages are a seen prefix for k <= lo
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if chain[mid - 1] in after:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def _shared(self, prompt: TokenizedPrompt) -> tuple[int, int]:
        """The shared prefix in tokens, and how many whole messages of it were seen."""
        lo = self._seen(prompt)
        shared = prompt.tokens_before(lo)
        if lo < len(prompt.segments):
            key = prompt.chain[lo - 1] if lo else b""
            segment = prompt.segments[lo]
            best = 0
            ordered = self.sorted.get(key)
            if ordered is not None and segment.tokens is not None:
                # the sequence sharing the longest prefix with this one is next to it in
                # sorted order: for a <= b <= c, prefix(a, c) = min(prefix(a, b), prefix(b, c))
                at = bisect.bisect_left(ordered, segment.tokens)
                for other in ordered[max(at - 1, 0):at + 1]:
                    best = max(best, common_prefix_length(segment.tokens, other) // 4)
                return shared + best, lo
            # newest first: the last message after this prefix usually shares the most,
            # and an older one is measured only if it beats that (one comparison)
            for other in reversed(list(self.after.get(key, {}).values())):
                if best and not _longer(segment, other, best):
                    continue
                best = max(best, prompt.segment_prefix(segment, other))
            shared += best
        return shared, lo

    def _remember(self, prompt: TokenizedPrompt, start: int = 0) -> None:
        """Record the prompt's prefixes; the first ``start`` messages are a prefix seen
        before (so they and every shorter prefix are recorded already)."""
        after, chain, ordered = self.after, prompt.chain, self.sorted
        key = chain[start - 1] if start else b""
        for i in range(start, len(chain)):
            segment = prompt.segments[i]
            followers = after.setdefault(key, {})
            if segment.digest not in followers:
                followers[segment.digest] = segment
                tokens = ordered.setdefault(key, [])
                if tokens is not None:
                    if segment.tokens is None:
                        ordered[key] = None
                    else:
                        bisect.insort(tokens, segment.tokens)
            key = chain[i]
        after.setdefault(key, {})

    def account(self, prompt: TokenizedPrompt) -> CacheUsage:
        """The longest prefix shared with an earlier prompt, under OpenAI's rules."""
        shared, seen = self._shared(prompt)
        self._remember(prompt, seen)
        if prompt.total < self.min_prompt:
            return CacheUsage()
        cached = shared // self.step * self.step
        return CacheUsage(cached if cached >= self.min_cached else 0)


def _longer(a: Segment, b: Segment, tokens: int) -> bool:
    """Whether two counted texts may share more than ``tokens`` leading tokens."""
    if a.tokens is not None and b.tokens is not None:
        size = 4 * (tokens + 1)
        return len(a.tokens) >= size and a.tokens[:size] == b.tokens[:size]
    return True


class AnthropicCache(CacheModel):
    """Anthropic's explicit cache, driven by the prompt's ``cache_control`` breakpoints.

    ``min_tokens``: a prefix shorter than this is neither written nor read (the
    API's minimum cacheable length). ``prompt.breakpoints`` must already be the
    ones the Anthropic rendering keeps (at most four, see
    :func:`turnpress.core.providers.anthropic_breakpoints`).
    """

    name = "anthropic"

    def __init__(self, *, min_tokens: int = 1024) -> None:
        self.min_tokens = min_tokens
        # prefix key -> (message index, offset, tokens) of every prefix written so far
        self.written: dict[bytes, tuple[int, int | None, int]] = {}

    def account(self, prompt: TokenizedPrompt) -> CacheUsage:
        """Read the longest written prefix this prompt repeats, write the rest up to its
        last breakpoint."""
        points = [p for p in prompt.breakpoints if p.tokens >= self.min_tokens]
        if not points:
            return CacheUsage()
        last = max(p.tokens for p in points)
        cached = 0
        for p in points:
            if p.key in self.written:
                cached = max(cached, p.tokens)
        for key, (index, offset, tokens) in self.written.items():
            if (offset is None and tokens <= last and tokens > cached
                    and prompt.prefix_key(index, None) == key):
                cached = tokens
        for p in points:
            self.written.setdefault(p.key, (p.index, p.offset, p.tokens))
        return CacheUsage(cached, max(0, last - cached))


CACHE_MODELS: dict[str, type[CacheModel]] = {
    "openai": OpenAICache,
    "anthropic": AnthropicCache,
    "none": NoCache,
}


def cache_model_names() -> list[str]:
    """The names accepted by ``--cache``: ``openai``, ``anthropic``, ``none``."""
    return list(CACHE_MODELS)


def new_cache_model(name: str) -> CacheModel:
    """A fresh cache model for one run; a ``ValueError`` lists the valid names."""
    try:
        return CACHE_MODELS[name]()
    except (KeyError, TypeError):
        valid = ", ".join(CACHE_MODELS)
        raise ValueError(f"unknown cache model {name!r}; valid: {valid}") from None
