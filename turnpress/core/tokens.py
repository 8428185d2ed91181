"""Token counting for prompts, with a per-run cache of every distinct message.

Tokenizers come from the ``register_tokenizers`` hook (built-ins: ``o200k_base``, the default,
and ``cl100k_base``, exact through ``bpe-openai``; ``chars4``, a rough ``len / 4``). A prompt's
tokens are the tokens of the concatenation of ``<|role|>\\n{content}\\n`` per message
(:func:`prompt_text`).

:class:`TokenCounter` encodes each distinct message once per run (a run is one trace: the prompts
of its turns under every strategy share most of their messages) and keeps a small, size-bounded
cache across runs for what repeats between traces (system prompts). A message is counted on its
own and the counts are added: for the BPE encodings that *is* the count of the concatenation,
because their pre-tokenizer always splits between the ``\\n`` that ends one message and the
``<|`` that starts the next (``tests/test_tokens.py`` checks it on every bundled prompt).
``chars4`` rounds each message down, so its totals can be a few tokens below
``len(prompt) // 4``. A long new message (a strategy's rebuilt summary, a cut tool output) is
encoded line by line where the encoding allows it (:attr:`Tokenizer.splits_lines`), each distinct
line once (lines are kept across runs, bounded), so its lines that earlier messages carried cost
nothing again.

:meth:`TokenCounter.tokenize` also gives what the cache models need: per-message token sequences
(or texts, for count-only tokenizers) to find the longest shared token prefix of two prompts, and
the token position and identity of each cache breakpoint.
"""

from __future__ import annotations

import hashlib
import operator
import re
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress, count, islice
from typing import Any

from turnpress.core.message_text import message_body, message_text, prompt_text
from turnpress.core.registry import Registry, get_registry

__all__ = [
    "DEFAULT_TOKENIZER",
    "CachePoint",
    "Segment",
    "TokenCounter",
    "TokenizedPrompt",
    "Tokenizer",
    "count_prompt_tokens",
    "get_tokenizer",
    "message_body",
    "message_text",
    "prompt_text",
    "tokenizer_names",
]

DEFAULT_TOKENIZER = "o200k_base"

# A line break followed by a printable ASCII character other than a space or "/": no pre-token
# of the OpenAI BPE encodings spans it (the only ones holding a line break are runs of whitespace,
# which such a character ends, and punctuation runs, which may end in line breaks and slashes),
# and none looks behind, so a text cut there is encoded piece by piece, each distinct piece once
# (a tokenizer says it may be, by a true ``splits_lines`` attribute on its count function).
_LINE_START = re.compile(r"\n(?=[!-.0-~])")
_CHUNKED_MIN_CHARS = 512  # shorter texts are encoded whole


@dataclass(frozen=True)
class Tokenizer:
    """A registered token counter.

    ``count_fn(text) -> int`` is what the plugin registered; when it also has an
    ``encode(text) -> list[int]`` method the tokenizer is *exact* and shared
    prefixes are measured on real token sequences.
    """

    name: str
    count_fn: Callable[[str], int]

    def count(self, text: str) -> int:
        """The number of tokens of ``text``."""
        n = self.count_fn(text)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"tokenizer {self.name!r} returned {n!r} for a text; a token "
                             f"count must be a non-negative integer")
        return n

    @property
    def encode(self) -> Callable[[str], Sequence[int]] | None:
        """The token-id encoder, or None for a count-only tokenizer."""
        encode = getattr(self.count_fn, "encode", None)
        return encode if callable(encode) else None

    @property
    def splits_lines(self) -> bool:
        """Whether encoding a text equals encoding its pieces cut before each line that
        starts with a printable ASCII character other than a space or ``/``, and
        joining the ids (true of ``o200k_base`` and
        ``cl100k_base``; lets :class:`TokenCounter` encode each distinct line once)."""
        return self.encode is not None and getattr(self.count_fn, "splits_lines", False) is True

    @property
    def exact(self) -> bool:
        """Whether token sequences (not just counts) are available."""
        return self.encode is not None


def tokenizer_names(registry: Registry | None = None) -> list[str]:
    """The names of all registered tokenizers, sorted."""
    return sorted((registry or get_registry()).tokenizers())


def get_tokenizer(name: str | Tokenizer = DEFAULT_TOKENIZER,
                  registry: Registry | None = None) -> Tokenizer:
    """The tokenizer registered as ``name``; a ``ValueError`` lists the valid names."""
    if isinstance(name, Tokenizer):
        return name
    registry = registry or get_registry()
    found = registry.tokenizers()
    if not isinstance(name, str) or name not in found:
        valid = ", ".join(sorted(found)) or "(none)"
        raise ValueError(f"unknown tokenizer {name!r}; registered tokenizers: {valid}."
                         + registry.failure_note())
    return Tokenizer(name, found[name].value)


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def common_prefix_length(a: Sequence[Any], b: Sequence[Any], start: int = 0) -> int:
    """How many leading items two sequences share (the first ``start`` known shared), found in
    C: strings and bytes by a binary search on slice equality; two lists (or two tuples) by
    slices of doubling length compared whole (a tight C loop), the first unequal one halved down
    to 64 items compared one by one; other sequences in one pass to the first difference."""
    hi = min(len(a), len(b))
    lo = min(max(start, 0), hi)  # a[:lo] == b[:lo]
    if type(a) is type(b) and type(a) in (list, tuple):
        size = 64
        while lo < hi:
            end = min(hi, lo + size)
            if a[lo:end] != b[lo:end]:
                while end - lo > 64:  # halved while its first half is unequal
                    mid = (lo + end) // 2
                    lo, end = (mid, end) if a[lo:mid] == b[lo:mid] else (lo, mid)
                return next(compress(count(lo), map(operator.ne, a[lo:end], b[lo:end])), end)
            lo, size = end, size * 2
        return hi
    if not isinstance(a, (str, bytes)):
        pairs = (a, b) if not lo else (islice(a, lo, hi), islice(b, lo, hi))
        return next(compress(count(lo), map(operator.ne, *pairs)), hi)
    if a[:hi] == b[:hi]:
        return hi
    hi -= 1  # a[:hi + 1] != b[:hi + 1]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if a[:mid] == b[:mid] else (lo, mid - 1)
    return lo


class Segment:
    """One counted text (a message as ``<|role|>\\n{content}\\n``, or a part of one).

    ``tokens`` holds the token ids as packed 32-bit integers for exact tokenizers,
    ``text`` the text itself for count-only ones; ``digest`` identifies the text.
    """

    __slots__ = ("count", "digest", "text", "tokens")

    def __init__(self, count: int, digest: bytes, tokens: bytes | None,
                 text: str | None) -> None:
        self.count = count
        self.digest = digest
        self.tokens = tokens
        self.text = text

    def __repr__(self) -> str:
        return f"Segment(count={self.count}, digest={self.digest.hex()[:8]})"


@dataclass(frozen=True)
class CachePoint:
    """A cache breakpoint of a prompt: ``(index, offset)`` as a strategy gives it, the
    number of tokens before it and a ``key`` identifying the prefix text up to it."""

    index: int
    offset: int | None
    tokens: int
    key: bytes


class TokenizedPrompt:
    """A prompt as counted: its message segments, total and cache breakpoints."""

    __slots__ = ("_count", "breakpoints", "chain", "cumulative", "segments", "total")

    def __init__(self, segments: Sequence[Segment], breakpoints: Sequence[CachePoint] = (),
                 count: Callable[[str], int] | None = None,
                 prefix: tuple[TokenizedPrompt, int] | None = None) -> None:
        self.segments = tuple(segments)
        self.breakpoints = tuple(breakpoints)
        self._count = count
        # ``prefix``: (an earlier prompt, k) whose first k segments are this prompt's
        # first k: their running totals and chain links are taken as they are
        start, chain, cumulative = 0, [], array("q", (0,))
        if prefix is not None and prefix[1] > 0:
            earlier, start = prefix
            chain = list(earlier.chain[:start])
            cumulative = earlier.cumulative[:start + 1]  # a slice: a new array
        # cumulative[i]: the tokens of the first i messages (8 bytes each, not an int object)
        running = cumulative[-1]
        for s in self.segments[start:]:
            running += s.count
            cumulative.append(running)
        self.cumulative = cumulative
        self.total = running
        # chain[i] identifies the first i + 1 messages (a digest is made in about the
        # time a memo of them would take to look it up, and a memo grows with the run)
        prev = chain[-1] if chain else b""
        for s in self.segments[start:]:
            prev = _digest(prev + s.digest)
            chain.append(prev)
        self.chain = tuple(chain)

    def with_segments(self, segments: tuple[Segment, ...]) -> TokenizedPrompt:
        """A copy holding ``segments`` (the same counts and digests, some without token
        ids); totals, chain and breakpoints are shared, not computed again."""
        copy = TokenizedPrompt.__new__(TokenizedPrompt)
        copy._count, copy.breakpoints, copy.chain = self._count, self.breakpoints, self.chain
        copy.cumulative, copy.total, copy.segments = self.cumulative, self.total, segments
        return copy

    def common_prefix(self, other: TokenizedPrompt) -> int:
        """The number of leading tokens this prompt shares with ``other``."""
        shared = 0
        for a, b in zip(self.segments, other.segments, strict=False):
            if a is b or a.digest == b.digest:
                shared += a.count
                continue
            shared += self.segment_prefix(a, b)
            break
        return shared

    def segment_prefix(self, a: Segment, b: Segment) -> int:
        """The leading tokens two counted texts share (all of them if they are equal)."""
        if a is b or a.digest == b.digest:
            return a.count
        if a.tokens is not None and b.tokens is not None:
            return common_prefix_length(a.tokens, b.tokens) // 4
        if a.text is not None and b.text is not None and self._count is not None:
            n = common_prefix_length(a.text, b.text)
            return min(self._count(a.text[:n]), a.count, b.count)
        return 0

    def prefix_key(self, index: int, offset: int | None,
                   partial: Segment | None = None) -> bytes | None:
        """The key of the prefix up to breakpoint ``(index, offset)`` (None when this
        prompt is too short to have it); ``partial`` is the counted text of message
        ``index`` cut at ``offset``."""
        if index >= len(self.segments):
            return None
        if offset is None:
            return self.chain[index]
        if partial is None:
            return None
        before = self.chain[index - 1] if index else b""
        return _digest(before + b"|" + partial.digest)

    def tokens_before(self, index: int) -> int:
        """The tokens of the messages before message ``index``."""
        if index >= 0:
            return self.cumulative[min(index, len(self.segments))]
        return sum(s.count for s in self.segments[:index])


RUN_CHARS = 2_000_000
"""Characters of message texts a :class:`TokenCounter` keeps per run (in each of two
generations) before it forgets the ones least recently met: a text met again after
that is known by its digest, not encoded again."""

PIECE_CHARS = 2_000_000
"""Characters of lines (pieces of long texts) it keeps, likewise, across runs (the runs
of one agent share many; a line forgotten and met again is encoded again)."""


class TokenCounter:
    """Counts prompts with one tokenizer, encoding each distinct text once per run.

    Call :meth:`start_run` between traces: the run cache is dropped (so memory
    stays flat however many traces stream through) while up to ``shared_chars``
    characters of recently used texts, and the lines of long texts, are kept across
    runs. Texts (``run_chars``) and lines (``piece_chars``) are kept up to a bound, so
    that a huge run does not keep every text its strategies rendered: each cache is
    two generations, the current one and the one before; a text found in the older
    moves to the current, and when the current one passes its bound, the older is
    dropped and the current becomes the older. A message text met again under
    another key is found by its 16-byte digest (kept in the same generations); a text
    or line dropped and met again is encoded again, to the same tokens.
    """

    def __init__(self, tokenizer: str | Tokenizer = DEFAULT_TOKENIZER, *,
                 shared_chars: int = 2_000_000, registry: Registry | None = None,
                 run_chars: int = RUN_CHARS, piece_chars: int = PIECE_CHARS) -> None:
        self.tokenizer = get_tokenizer(tokenizer, registry)
        self._encode = self.tokenizer.encode
        self._chunked = self.tokenizer.splits_lines
        # a line (piece) -> its token ids, across runs: (current, older) generations
        self._pieces: dict[Any, bytes] = {}
        self._old_pieces: dict[Any, bytes] = {}
        self._piece_chars, self._piece_limit = 0, piece_chars
        self._run: dict[tuple[str, str], Segment] = {}
        self._old_run: dict[tuple[str, str], Segment] = {}
        self._run_chars, self._run_limit = 0, run_chars
        # the texts counted in this run, by digest, in the same two generations (a text
        # that left the generations above is found here; one older is encoded again)
        self._by_digest: dict[bytes, Segment] = {}
        self._old_digest: dict[bytes, Segment] = {}
        # id(tool_calls list) -> (the list, its text): replayed messages share their lists
        self._bodies: dict[int, tuple[Any, str, Any]] = {}
        self._shared: OrderedDict[tuple[str, str], Segment] = OrderedDict()
        self._shared_chars = 0
        self._shared_limit = shared_chars
        self.encoded = 0
        self.lookups = 0

    def start_run(self) -> None:
        """Forget the texts of the previous run (the cross-run cache and lines stay)."""
        self._run, self._old_run, self._run_chars, self._by_digest = {}, {}, 0, {}
        self._old_digest = {}
        self._bodies = {}

    def body(self, message: Mapping[str, Any]) -> str:
        """:func:`message_body`, remembered per run for messages with tool calls or
        non-string content (their parts are shared by the prompts of a run)."""
        content = message.get("content")
        if isinstance(content, str) and not message.get("tool_calls"):
            return content
        key_obj = message.get("tool_calls") or content
        if key_obj is None:
            return message_body(message)
        found = self._bodies.get(id(key_obj))
        if found is not None and found[0] is key_obj:
            if not message.get("tool_calls") or found[2] is content:
                return found[1]
        text = message_body(message)
        self._bodies[id(key_obj)] = (key_obj, text, content)
        return text

    def bodies(self, messages: Iterable[Mapping[str, Any]]) -> list[str]:
        """:meth:`body` of each message (plain text messages without a call)."""
        body, memo = self.body, self._bodies
        out: list[str] = []
        append = out.append
        for m in messages:
            c = m.get("content")
            calls = m.get("tool_calls")
            if not calls:
                append(c if type(c) is str else body(m))
                continue
            found = memo.get(id(calls))  # as body() finds it, without the call
            if found is not None and found[0] is calls and found[2] is c:
                append(found[1])
            else:
                append(body(m))
        return out

    def _make(self, text: str, digest: bytes | None = None) -> Segment:
        self.encoded += 1
        if digest is None:
            digest = _digest(text.encode("utf-8", "surrogatepass"))
        if self._encode is not None:
            if self._chunked and len(text) >= _CHUNKED_MIN_CHARS:
                tokens = self._encode_pieces(text)
                return Segment(len(tokens) // 4, digest, tokens, None)
            ids = self._encode(text)
            return Segment(len(ids), digest, array("I", ids).tobytes(), None)
        return Segment(self.tokenizer.count(text), digest, None, text)

    def _encode_pieces(self, text: str) -> bytes:
        """The packed token ids of ``text``, encoded line by line (``_LINE_START``), each
        distinct line once while kept (under its text without the cut line break; the
        last one under a 1-tuple)."""
        parts: list[Any] = _LINE_START.split(text)
        parts[-1] = (parts[-1],)
        found = list(map(self._pieces.get, parts))  # in C: most lines are known
        if None not in found:
            return b"".join(found)  # type: ignore[arg-type]
        encode, pieces = self._encode, self._pieces
        assert encode is not None
        for i, tokens in enumerate(found):
            if tokens is None:  # from the older generation, or encoded
                part = parts[i]
                line = part[0] if type(part) is tuple else part + "\n"
                tokens = self._old_pieces.get(part) or array("I", encode(line)).tobytes()
                found[i] = pieces[part] = tokens
                self._piece_chars += len(line)
                if self._piece_chars > self._piece_limit:  # a new generation
                    self._old_pieces, self._piece_chars = pieces, 0
                    pieces = self._pieces = {}
        return b"".join(found)  # type: ignore[arg-type]

    def _lookup(self, role: str, content: str) -> Segment:
        self.lookups += 1
        key = (role, content)
        seg = self._run.get(key)
        if seg is not None:
            return seg
        seg = self._old_run.get(key)  # met in the generation before: moves up
        if seg is None:
            seg = self._shared.get(key)
            if seg is not None:
                self._shared.move_to_end(key)
        if seg is None:  # dropped from both generations, or new: known by its digest?
            text = message_text(role, content) if role else content
            digest = _digest(text.encode("utf-8", "surrogatepass"))
            seg = self._by_digest.get(digest) or self._old_digest.get(digest)
            if seg is not None:
                self._by_digest[digest] = seg
        if seg is None:
            seg = self._by_digest[digest] = self._make(text, digest)
            size = len(content)
            if size <= self._shared_limit // 4:
                self._shared[key] = seg
                self._shared_chars += size
                while self._shared_chars > self._shared_limit:
                    (_, old), _seg = self._shared.popitem(last=False)
                    self._shared_chars -= len(old)
        self._run[key] = seg
        self._run_chars += len(content)
        if self._run_chars > self._run_limit:  # a new generation
            self._old_run, self._run, self._run_chars = self._run, {}, 0
            self._old_digest, self._by_digest = self._by_digest, {}
        return seg

    def segment(self, role: str, content: str) -> Segment:
        """The counted ``<|role|>\\n{content}\\n`` of one message."""
        return self._lookup(role, content)

    def text(self, text: str) -> Segment:
        """A counted raw text (used for a message cut at a breakpoint)."""
        return self._lookup("", text)

    def count(self, messages: Iterable[Mapping[str, Any]]) -> int:
        """The tokens of a prompt (a list of ``{"role", "content"}`` messages; provider
        messages with tool calls, ``tool`` roles and list content are counted as
        :func:`message_body` gives them)."""
        return sum(self.segment(m["role"], self.body(m)).count for m in messages)

    def tokenize(self, messages: Sequence[Mapping[str, Any]],
                 breakpoints: Iterable[tuple[int, int | None]] = (),
                 bodies: Sequence[str] | None = None,
                 prefix: tuple[TokenizedPrompt, int] | None = None) -> TokenizedPrompt:
        """A prompt's segments, plus the token position and key of each breakpoint.

        ``breakpoints`` are ``(message_index, offset | None)`` pairs, as
        ``Strategy.cache_breakpoints`` and :func:`turnpress.core.providers.anthropic_breakpoints`
        give them; they must be in range. ``bodies``: the messages' :meth:`body` texts,
        when the caller already has them. ``prefix``: ``(earlier, k)``, an earlier
        prompt of this counter's run whose first ``k`` messages have the same roles
        and bodies as this one's (their segments are reused, not looked up again).
        """
        if bodies is None:
            bodies = self.bodies(messages)
        run = self._run
        start = 0
        if prefix is not None and prefix[1] > 0:
            start = prefix[1]
            segments = list(prefix[0].segments[:start])
            self.lookups += start
        else:
            segments = []
        hits = 0
        for m, b in zip(messages[start:], bodies[start:], strict=True):
            seg = run.get((m["role"], b))
            if seg is None:
                seg = self._lookup(m["role"], b)
            else:
                hits += 1
            segments.append(seg)
        self.lookups += hits
        prompt = TokenizedPrompt(segments, count=self.tokenizer.count, prefix=prefix)
        points = []
        for index, offset in breakpoints:
            if offset is None:
                tokens = prompt.tokens_before(index + 1)
                key = prompt.prefix_key(index, None)
            else:
                message = messages[index]
                partial = self.text(f"<|{message['role']}|>\n{bodies[index][:offset]}")
                tokens = prompt.tokens_before(index) + partial.count
                key = prompt.prefix_key(index, offset, partial)
            assert key is not None
            points.append(CachePoint(index, offset, tokens, key))
        prompt.breakpoints = tuple(points)
        return prompt


def count_prompt_tokens(messages: Iterable[Mapping[str, Any]],
                        tokenizer: str | Tokenizer = DEFAULT_TOKENIZER) -> int:
    """The tokens of one prompt (for many prompts, reuse a :class:`TokenCounter`)."""
    return TokenCounter(tokenizer).count(messages)
