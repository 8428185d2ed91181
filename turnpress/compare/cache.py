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
  repeats it, either at one of its own breakpoints or at a message boundary at
  most :data:`LOOKBACK` (20) content blocks before one of them (the API checks the
  earlier block boundaries that far back, no further: a prefix written further back
  than that from every breakpoint of the prompt is a miss, written again).
- ``none`` — nothing is cached.
"""

from __future__ import annotations

import bisect
import heapq
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any, ClassVar

from turnpress.core.pricing import CacheRules, get_cache_rules
from turnpress.core.tokens import CachePoint, Segment, TokenizedPrompt

__all__ = [
    "CACHE_MODELS",
    "LOOKBACK",
    "NOTHING_CACHED",
    "STATES",
    "AnthropicCache",
    "BlockPoint",
    "CacheModel",
    "CacheUsage",
    "DigestSet",
    "NoCache",
    "OpenAICache",
    "cache_model_names",
    "lookback_reach",
    "new_cache_model",
]


@dataclass(frozen=True)
class CacheUsage:
    """What the cache did for one prompt: tokens read from it and tokens written to it."""

    cached: int = 0
    written: int = 0


NOTHING_CACHED = CacheUsage()
"""The usage of a prompt the cache did nothing for (one instance: usages are frozen)."""


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
        return NOTHING_CACHED


STATES = 4096
"""Message-prefix states an :class:`OpenAICache` keeps beyond twice its latest prompt's
messages before it keeps only that prompt's (a memo: the answers do not change)."""


class OpenAICache(CacheModel):
    """OpenAI's automatic prefix cache.

    ``min_prompt``: prompts shorter than this are never served from cache;
    ``step``: cached lengths are rounded down to a multiple of it; ``min_cached``:
    the smallest hit (the API's first cache block).

    With an exact tokenizer (token ids), the model keeps no tokens: the API caches a
    prompt in blocks of ``step`` tokens, so what decides a hit is whether the first
    ``k * step`` tokens equal those of an earlier prompt. The model keeps a digest of
    every such block prefix it was sent (chained: each block's digest covers the
    digest before it: Python's 64-bit ``hash`` of the pair, which is keyed per process,
    as the model is) and, per whole-message prefix, where the last block boundary
    left off (its digest and the at most ``step - 1`` tokens after it), so a new
    prompt is hashed from its first message not seen in that position. Memory is a
    few bytes per ``step`` tokens of distinct prefixes instead of the tokens of every
    distinct message. The longest prefix shared with any earlier prompt, rounded
    down to ``step``, is the largest ``k`` whose digest was seen (if ``k`` blocks
    match an earlier prompt, so do its first ``k - 1``). With a count-only tokenizer
    (texts, no ids) the texts are compared, as :class:`_TextPrefixes` does.
    """

    name = "openai"

    def __init__(self, *, min_prompt: int = 1024, step: int = 128,
                 min_cached: int = 1024) -> None:
        if step < 1:
            raise ValueError(f"step must be a positive number of tokens, got {step!r}")
        self.min_prompt = min_prompt
        self.step = step
        self.min_cached = min_cached
        # whole-message prefixes seen (their chain digest, b"" for the empty prefix) ->
        # the digest of its last whole block (8 bytes) and the packed tokens after it, in
        # one bytes object (a long run keeps one per message): where to resume hashing,
        # so a memo; bounded by :data:`STATES` (see :meth:`_forget`)
        self.states: dict[bytes, bytes] = {b"": _state(0, b"")}
        self.blocks = DigestSet()  # the digest of every block prefix seen
        self._texts: _TextPrefixes | None = None  # count-only tokenizers
        self._ids = False  # decided: the prompts carry token ids
        self._last = 0  # the messages of the last prompt remembered

    def shared_prefix(self, prompt: TokenizedPrompt) -> int:
        """The longest token prefix ``prompt`` shares with an earlier prompt of the run,
        rounded down to a multiple of ``step`` (the API caches whole blocks; with a
        count-only tokenizer: not rounded)."""
        texts = self._text_model(prompt)
        if texts is not None:
            return texts.shared(prompt)[0]
        return self._blocks(prompt, remember=False)

    def _text_model(self, prompt: TokenizedPrompt) -> _TextPrefixes | None:
        """The text model when the run's prompts are counted by a count-only tokenizer,
        else None: decided once, on the first prompt with a message (a tokenizer gives
        all its prompts the same kind of segments; later prompts hold light copies,
        without ids nor texts, which tell nothing)."""
        if self._texts is None and not self._ids:
            if _count_only(prompt):
                self._texts = _TextPrefixes()
            elif prompt.segments:
                self._ids = True
        return self._texts

    def _blocks(self, prompt: TokenizedPrompt, remember: bool) -> int:
        """The shared prefix in tokens, a multiple of ``step``; ``remember``: record the
        prompt's block digests and message-prefix states."""
        chain, segments, step_bytes = prompt.chain, prompt.segments, 4 * self.step
        states = self.states
        # the last prompt remembered is usually this one's start: its prefixes were seen
        lo = _seen_prefix(chain, states, self._last)
        if lo == len(segments):  # sent before as it is: every block of it was seen
            return prompt.cumulative[lo] // self.step * self.step
        state = states[chain[lo - 1] if lo else b""]
        digest, tail = int.from_bytes(state[:8], "little", signed=True), state[8:]
        blocks = self.blocks
        # after the first block not seen, the chained digests are new (but for a 64-bit
        # collision, which the merge drops): added to the set of the newest unchecked
        newest = blocks.newest
        add = newest.add
        matched = prompt.cumulative[lo] // self.step  # every block of a seen prefix
        matching = True
        for i in range(lo, len(segments)):
            tokens = segments[i].tokens
            if tokens is None:
                raise ValueError(f"message {i} of the prompt has no token ids, and it "
                                 f"follows a prefix this cache model was not sent")
            data = tail + tokens if tail else tokens
            end = len(data) - len(data) % step_bytes
            if end:
                view = memoryview(data)
                at = 0
                while matching and at < end:
                    digest = hash((digest, view[at:at + step_bytes]))
                    at += step_bytes
                    if digest in newest or digest in blocks:
                        matched += 1
                        continue  # seen: already remembered
                    matching = False
                    if not remember:
                        return matched * self.step
                    add(digest)
                # past the first block not seen: every digest is new
                for rest in range(at, end, step_bytes):
                    digest = hash((digest, view[rest:rest + step_bytes]))
                    add(digest)
            tail = data[end:]
            if remember:
                states[chain[i]] = _state(digest, tail)
        if remember:
            self._last = len(segments)
            if len(newest) > blocks.MIN_NEWEST:
                blocks.settle()
            if len(states) > STATES + 2 * len(chain):
                self._forget(chain)
        return matched * self.step

    def _forget(self, chain: tuple[bytes, ...]) -> None:
        """Keep only the states of the prompt just remembered (``chain``): a run whose
        prompts each rewrite their messages (a rolling window, a view rebuilt every
        turn) would otherwise keep one per message of every prompt. A state is only
        where to resume hashing; every block digest stays in :attr:`blocks`, so a
        prompt that repeats a forgotten prefix hashes it again to the same answer
        (any seen prefix found is a valid start, the longest is only the fastest)."""
        states = self.states
        self.states = {b"": states[b""], **{c: states[c] for c in chain}}

    def account(self, prompt: TokenizedPrompt) -> CacheUsage:
        """The longest prefix shared with an earlier prompt, under OpenAI's rules."""
        texts = None if self._ids else self._text_model(prompt)
        if texts is not None:
            shared, seen = texts.shared(prompt)
            texts.remember(prompt, seen)
            shared = shared // self.step * self.step
        else:
            shared = self._blocks(prompt, remember=True)
        if prompt.total < self.min_prompt or shared < self.min_cached:
            return NOTHING_CACHED
        return CacheUsage(shared)


class DigestSet:
    """A set of 64-bit digests in about 8 bytes each: a sorted ``array`` searched by
    bisection, and a small ``set`` of the newest, merged into the array when it grows
    past an eighth of it (a ``set`` of Python ints costs about 80 bytes an entry)."""

    __slots__ = ("merged", "newest")

    MIN_NEWEST = 4096
    """The newest digests kept in the ``set`` before a merge, at least."""

    def __init__(self) -> None:
        self.merged = array("q")
        self.newest: set[int] = set()

    def __contains__(self, digest: int) -> bool:
        if digest in self.newest:
            return True
        merged = self.merged
        at = bisect.bisect_left(merged, digest)
        return at < len(merged) and merged[at] == digest

    def __len__(self) -> int:
        return len(self.merged) + len(self.newest)

    def add(self, digest: int) -> None:
        """Add one digest (a signed 64-bit int, as ``hash()`` gives)."""
        if digest in self:
            return
        self.newest.add(digest)
        self.settle()

    def settle(self) -> None:
        """Merge the newest digests into the array once they are past an eighth of it
        (digests added to :attr:`newest` directly, without :meth:`add`'s check, may be
        in the array already: they are kept once)."""
        if len(self.newest) > max(self.MIN_NEWEST, len(self.merged) // 8):
            self.merged = array("q", (d for d, _ in groupby(heapq.merge(
                self.merged, sorted(self.newest)))))
            self.newest = set()


def _state(digest: int, tail: bytes) -> bytes:
    """A message-prefix state of :class:`OpenAICache`: ``digest`` (a signed 64-bit int)
    as 8 bytes, then ``tail``."""
    return digest.to_bytes(8, "little", signed=True) + tail


def _count_only(prompt: TokenizedPrompt) -> bool:
    """Whether ``prompt`` was counted by a count-only tokenizer (its segments carry
    texts, not token ids; segments with neither are copies kept without their ids, see
    :func:`turnpress.compare.reuse.without_tokens`)."""
    return any(s.text is not None for s in prompt.segments)


def _seen_prefix(chain: tuple[bytes, ...], seen: dict[bytes, Any], hint: int = 0) -> int:
    """How many leading messages form a prefix in ``seen`` (a prefix seen means all its
    shorter prefixes were seen: binary search, above the first ``hint`` when they are
    a seen prefix)."""
    lo, hi = 0, len(chain)  # the first k messages are a seen prefix for k <= lo
    if 0 < hint <= hi and chain[hint - 1] in seen:
        lo = hint
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if chain[mid - 1] in seen:
            lo = mid
        else:
            hi = mid - 1
    return lo


class _TextPrefixes:
    """The exact longest shared prefix for count-only tokenizers, whose segments carry
    their texts: per whole-message prefix, the distinct messages that followed it; the
    next message is compared with each of them (newest first)."""

    def __init__(self) -> None:
        self.after: dict[bytes, dict[bytes, Segment]] = {}

    def shared(self, prompt: TokenizedPrompt) -> tuple[int, int]:
        """The shared prefix in tokens, and how many whole messages of it were seen."""
        lo = _seen_prefix(prompt.chain, self.after)
        shared = prompt.tokens_before(lo)
        if lo < len(prompt.segments):
            key = prompt.chain[lo - 1] if lo else b""
            segment = prompt.segments[lo]
            best = 0
            # newest first: the last message after this prefix usually shares the most,
            # and an older one is measured only if it beats that (one comparison)
            for other in reversed(list(self.after.get(key, {}).values())):
                if best and not _longer(segment, other, best):
                    continue
                best = max(best, prompt.segment_prefix(segment, other))
            shared += best
        return shared, lo

    def remember(self, prompt: TokenizedPrompt, start: int = 0) -> None:
        """Record the prompt's prefixes; the first ``start`` messages are a prefix seen
        before (so they and every shorter prefix are recorded already)."""
        after, chain = self.after, prompt.chain
        key = chain[start - 1] if start else b""
        for i in range(start, len(chain)):
            after.setdefault(key, {}).setdefault(prompt.segments[i].digest,
                                                 prompt.segments[i])
            key = chain[i]
        after.setdefault(key, {})


def _longer(a: Segment, b: Segment, tokens: int) -> bool:
    """Whether two counted texts may share more than ``tokens`` leading tokens."""
    if a.tokens is not None and b.tokens is not None:
        size = 4 * (tokens + 1)
        return len(a.tokens) >= size and a.tokens[:size] == b.tokens[:size]
    return True


LOOKBACK = 20
"""How many content blocks before one of a prompt's ``cache_control`` breakpoints the
Anthropic API looks for a prefix it wrote. Anthropic's prompt caching documentation
(https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching, "How automatic
prefix checking works"): "When you add a ``cache_control`` breakpoint, the system
automatically checks for cache hits at all previous content block boundaries (up to
approximately 20 blocks before your explicit breakpoint)", and one reason to add
breakpoints is to "ensure caching for content more than 20 blocks before your final
breakpoint" (the newer pages call it "the 20-block lookback window"). So a prefix is
read when it ends at most this many blocks before (or at) one of the prompt's
breakpoints: 20 blocks back is read, 21 is not."""


@dataclass(frozen=True)
class BlockPoint(CachePoint):
    """A cache breakpoint with how far back the Anthropic API looks from it: ``reach``,
    the fewest leading messages of a prefix whose end is at most :data:`LOOKBACK`
    content blocks before the breakpoint (:func:`lookback_reach`). ``compare`` counts
    the blocks of the Anthropic rendering
    (:func:`~turnpress.compare.counting.block_count`); a plain :class:`CachePoint` is
    taken on a prompt of one block per message."""

    reach: int = 1


def lookback_reach(blocks: Sequence[int], cuts: Sequence[int], point: CachePoint,
                   breakpoints: Sequence[CachePoint] = ()) -> int:
    """The fewest leading messages a prefix may hold and still end at most
    :data:`LOOKBACK` content blocks before ``point``: the API checks the block
    boundaries that far back from a breakpoint, no further.

    ``blocks[m]``: the content blocks of the first ``m`` messages when no breakpoint
    cuts a message's text; ``cuts``: the index of the message of each breakpoint that
    cuts it into two blocks (sorted; the block before the cut carries the mark);
    ``breakpoints``: all the prompt's, to rank the cuts inside one message."""
    index = point.index
    if point.offset is None or index not in cuts:  # the mark is on the message's last block
        at = blocks[index + 1] + bisect.bisect_right(cuts, index)
    else:  # on the block before its cut: the message's first, one more per earlier cut
        rank = sum(1 for q in breakpoints if q.index == index and q.offset is not None
                   and q.offset <= point.offset)
        at = blocks[index] + bisect.bisect_left(cuts, index) + max(rank, 1)
    if not cuts:
        return max(1, bisect.bisect_left(blocks, at - LOOKBACK, 0, index + 1))
    m = index + 1  # the first m messages end at blocks[m] plus the cuts in them
    while m > 1 and at - blocks[m - 1] - bisect.bisect_left(cuts, m - 1) <= LOOKBACK:
        m -= 1
    return m


class AnthropicCache(CacheModel):
    """Anthropic's explicit cache, driven by the prompt's ``cache_control`` breakpoints.

    ``min_tokens``: a prefix shorter than this is neither written nor read (the
    API's minimum cacheable length). ``prompt.breakpoints`` must already be the
    ones the Anthropic rendering keeps (at most four, see
    :func:`turnpress.core.providers.anthropic_breakpoints`). A prompt reads the longest
    written prefix it repeats that ends at one of its breakpoints, or at a message
    boundary at most :data:`LOOKBACK` content blocks before one of them (a
    :class:`BlockPoint`'s ``reach``; a plain :class:`CachePoint` counts one block a
    message and one more for a cut at an offset). Only the keys of the written
    prefixes are kept; a prompt checks at most its breakpoints and the message
    boundaries within the lookback, not every prefix written.
    """

    name = "anthropic"

    def __init__(self, *, min_tokens: int = 1024) -> None:
        self.min_tokens = min_tokens
        self.written: set[bytes] = set()  # the key of every prefix written so far

    def account(self, prompt: TokenizedPrompt) -> CacheUsage:
        """Read the longest written prefix this prompt repeats within the lookback of
        one of its breakpoints, write the rest up to its last breakpoint."""
        points = [p for p in prompt.breakpoints if p.tokens >= self.min_tokens]
        if not points:
            return NOTHING_CACHED
        written, chain, cumulative = self.written, prompt.chain, prompt.cumulative
        last = max(p.tokens for p in points)
        cached = max((p.tokens for p in points if p.key in written), default=0)
        plain: tuple[range, tuple[int, ...]] | None = None
        for p in points:
            if isinstance(p, BlockPoint):
                reach = p.reach
            else:  # one block a message, and a cut at each offset
                if plain is None:
                    plain = (range(len(prompt.segments) + 1), tuple(
                        q.index for q in prompt.breakpoints if q.offset is not None))
                reach = lookback_reach(*plain, p, prompt.breakpoints)
            # the whole-message prefixes before the breakpoint, longest first
            m = p.index
            while m >= reach and cumulative[m] > cached:
                if chain[m - 1] in written:
                    cached = cumulative[m]
                    break
                m -= 1
        written.update(p.key for p in points)
        return CacheUsage(cached, max(0, last - cached))


CACHE_MODELS: dict[str, type[CacheModel]] = {
    "openai": OpenAICache,
    "anthropic": AnthropicCache,
    "none": NoCache,
}


def cache_model_names() -> list[str]:
    """The names accepted by ``--cache``: ``openai``, ``anthropic``, ``none``."""
    return list(CACHE_MODELS)


def new_cache_model(name: str, rules: CacheRules | None = None) -> CacheModel:
    """A fresh cache model for one run; a ``ValueError`` lists the valid names.
    ``rules``: the cache's rules for the model priced (:func:`~turnpress.core.pricing.rules_for`:
    its smallest cached prefix), when they are not the cache model's own."""
    try:
        model = CACHE_MODELS[name]
    except (KeyError, TypeError):
        valid = ", ".join(CACHE_MODELS)
        raise ValueError(f"unknown cache model {name!r}; valid: {valid}") from None
    if rules is None or rules.min_tokens == get_cache_rules(name).min_tokens:
        return model()
    if model is AnthropicCache:
        return AnthropicCache(min_tokens=rules.min_tokens)
    if model is OpenAICache:
        return OpenAICache(min_prompt=rules.min_tokens, min_cached=rules.min_tokens)
    return model()
