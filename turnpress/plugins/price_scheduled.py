"""Built-in plugin: ``price-scheduled``, a compacted prefix rebuilt when the price says so.

``checkpoint-coalesced`` rebuilds its coalesced view every ``every`` turns. No fixed
count is right for every price list and every run: Anthropic bills a cache write at
1.25x the input price and a read at 0.1x, OpenAI bills no write premium and a read at
0.25x, and a run that prints a lot grows its stale part faster than one that does not.
This strategy keeps the same layout (the coalesced view as of the last rebuild, then
one compact delta per later turn) and decides each turn, from the price
(``RenderContext.price``, DESIGN §11) and the run so far, whether the next prompt
appends the new turn's delta or rebuilds the view.

The rule is ski rental (:class:`RebuildRule`). Appending costs, on every call, reading
the stale part again at the cached price: the deltas since the last rebuild, less what
those turns would take in a rebuilt view. Rebuilding costs writing the rebuilt view
once. The strategy rebuilds as soon as the reading it paid since the last rebuild
reaches the cost of that write; so it never pays more than about twice what the best
schedule chosen in hindsight pays (see ``tests/test_strategies_price_scheduled.py``),
and how often it rebuilds follows from the prices and from how fast the run grows. A
prompt that would pass ``max_tokens`` (about four characters a token) rebuilds too.

What a rebuild keeps is decided from the run so far, never from a measure of recall:
the view of ``checkpoint-coalesced`` (each turn's output as key lines, the open error,
``user/``; on a transcript the recent tool calls and outputs cut to head plus tail)
plus the names, paths and numbers that earlier outputs showed and the agent went on to
use (tool results later referred to, files being edited), most recently used first
(:func:`names_in_use`). A PTC-Lisp view shows a turn's passing parts (its tool calls,
the first and last lines of its output) only for the latest turn: an older turn's were
shown by its compact delta in every prompt from the turn to the rebuild. Never larger:
the view only lists a name the rest of it does not show, and a delta that would not be
shorter than its turn keeps the turn.

Compress the code, keep the learnings: a PTC-Lisp turn is appended as its compact
delta, which is what later prompts re-read: each tool call with its arguments cut
short, the names it defined, its output cut as in the rebuilt view (first and last
``turn_lines`` lines plus key lines), its error. The latest turn shows what its delta
shows (tool calls, names defined, output cut to ``output_lines`` lines at each end,
error), each part once: its compact delta, then the rest (:meth:`PriceScheduled.rest`),
past the last cache breakpoint, which the next prompt drops. The rent counts the
compact deltas, and what a rebuilt view would grow by counts a turn's tool calls only
while the view's tool-call section (the newest ``tool_call_limit``) has room.

Each rebuild shares the longest prefix it can with the view before it: the view puts
the stable head first, then the older turns' key lines (a section later rebuilds only
append to), then ``user/`` (which changes only when the agent defines something), then
what changes every rebuild; the breakpoints mark each end, so a rebuild re-reads the
part the view before it wrote and writes only the rest (DESIGN §11).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from copy import copy
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

from turnpress.core.compression import (
    Breakpoint,
    RenderContext,
    defined_names,
    error_message,
    has_printed,
)
from turnpress.core.hookspecs import hookimpl
from turnpress.core.model import Message, Turn
from turnpress.core.providers import MAX_ANTHROPIC_BREAKPOINTS
from turnpress.plugins._imported_messages import (
    assistant_messages,
    content_text,
    feedback_text,
    first_tool_turn,
    mission_text,
    preamble_head,
    tool_calls,
    transcript_head_breakpoints,
    words_at,
    words_section,
)
from turnpress.plugins.checkpoint_coalesced import (
    DELTA_LINE_CHARS,
    CheckpointCoalesced,
    _CheckpointView,
    _Prefix,
    _size,
    key_lines,
    key_rows,
    key_text,
    turn_names,
)
from turnpress.plugins.full_history import same_turns
from turnpress.plugins.single_user_coalesced import ERROR_MODES

#: the first line of the ``user/`` section (``namespaces/user.j2``)
USER_HEADER = ";; === user/ (your prelude) ==="

#: about this many characters make a token (the scheduler counts characters: only the
#: ratio of two costs decides, and ``max_tokens`` is a ceiling, not a bill)
CHARS_PER_TOKEN = 4

#: a name, path or number in a text, at the start of a run of word characters, ``.``,
#: ``-`` and ``/`` (:data:`_RUN`): a path (``src/a/b.py``, ``./x``), a file name with an
#: extension, a name with an inner ``_``, ``.`` or ``-`` or in camelCase, a number of
#: three or more digits
_REF_AT_RUN = re.compile(
    r"(?:[\w.\-]*/)+[\w.\-]+"  # a path
    r"|[A-Za-z_]\w*(?:[.\-]\w+)+"  # dotted or dashed: fields.py, np.nan, schema-level
    r"|\w*[a-z0-9]_\w+|_\w+_\w*"  # inner underscore: sky_diffuse, _invoke_validators
    r"|[A-Za-z]*[a-z][A-Z]\w*"  # camelCase: isScalar, ZeroDivisionError
    r"|\d{3,}(?![\w.])"  # a number of 3+ digits (a line, an id, a size)
)
#: :data:`_REF_AT_RUN` searched anywhere: where a run starts (what ``refs`` finds)
_REF = re.compile(r"(?<![\w.\-/])(?:" + _REF_AT_RUN.pattern + ")")
#: a run of three or more word characters, ``.``, ``-`` and ``/`` (a shorter one holds
#: no reference of three characters)
_RUN = re.compile(r"[\w.\-/]{3,}")


@lru_cache(maxsize=1 << 14)
def refs(text: str) -> frozenset[str]:
    """The names, paths and numbers ``text`` shows (:data:`_REF`'s matches), each of at
    least three characters, without a trailing ``.``, ``-`` or ``/``.

    Found run by run (:data:`_RUN`, one C-level pass): a match starts where a run does
    and stays inside it, and a run of letters only, all lower case, all upper case or
    capitalised, holds none (no ``_``, ``.``, ``-``, ``/``, digit nor camelCase), so only
    the other runs are matched (searching the whole text tries every alternative at
    every run, twice as slow)."""
    match = _REF_AT_RUN.match
    found = []
    for run in _RUN.findall(text):
        if run.isalpha() and (run.islower() or run.isupper() or run.istitle()):
            continue
        ref = match(run)
        if ref is not None:
            name = ref.group().rstrip(".-/")
            if len(name) >= 3:
                found.append(name)
    return frozenset(found)


_NOT_BEFORE = frozenset("_.-/")  # with the word characters: (?<![\w.\-/])
_NOT_AFTER = frozenset("_-/")  # (?![\w\-/])


def shows_name(text: str, name: str) -> bool:
    """Whether ``text`` shows ``name`` as a whole name (not inside a longer name, path
    or number): what ``re.search`` of ``(?<![\\w.\\-/])name(?![\\w\\-/])`` finds, checked
    only where ``name`` occurs (``str.find``, in C; the pattern, starting with a
    look-behind, is tried at every position of a long text, and compiling one per
    name costs more than the search)."""
    size, end = len(name), len(text)
    at = text.find(name)
    while at >= 0:
        before = text[at - 1] if at else ""
        after = text[at + size] if at + size < end else ""
        if not (before and (before.isalnum() or before in _NOT_BEFORE)) \
                and not (after and (after.isalnum() or after in _NOT_AFTER)):
            return True
        at = text.find(name, at + 1)
    return False


#: a name that no line break can split (:meth:`_PricedView.names_section`)
_WORD = re.compile(r"[\w.\-/]+")


@lru_cache(maxsize=1 << 15)
def _shows_in_head(head: str, name: str) -> bool:
    """:func:`shows_name` in a text every rebuild of a run repeats (its mission)."""
    return shows_name(head, name)


# -- the rule ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Rates:
    """What one token costs the scheduler, in any unit: ``read`` from the cache and
    ``write`` (a prefix sent for the first time: the cache-write price where the
    provider bills one, else the uncached input price)."""

    read: float
    write: float


def rates(ctx: RenderContext) -> Rates:
    """The scheduler's rates from ``ctx.price`` under ``ctx.cache`` (DESIGN §11): under
    Anthropic's cache a write costs the cache-write price, under OpenAI's the input
    price (no premium), and with no cache every token costs the input price."""
    price, cache = ctx.price, ctx.cache.name
    if cache == "none":
        return Rates(price.input, price.input)
    if cache == "anthropic":
        return Rates(price.cached, price.effective_write)
    return Rates(price.cached, price.input)


@dataclass(frozen=True)
class RebuildRule:
    """The ski-rental rule of ``price-scheduled`` on sizes alone (any unit, e.g. tokens).

    Between rebuilds each prompt carries the rebuilt view of size ``view`` and the deltas
    appended since, of total size ``appended``; a rebuild now would give a view of size
    ``view + growth`` (``growth``: what the turns since the last rebuild add to a view).
    The stale part ``appended - growth`` is re-read on every call at ``rates.read``:
    that is the rent. Rebuilding costs writing the new view once, at ``rates.write``:
    that is the price of buying. :meth:`due` says buy once the rent paid since the last
    rebuild reaches it. ``limit``: a prompt larger than this (with ``head``) rebuilds.
    """

    rates: Rates
    limit: float = float("inf")

    def rent(self, appended: float, growth: float) -> float:
        """What one call pays for re-reading the stale part."""
        return self.rates.read * max(0.0, appended - growth)

    def due(self, paid: float, view: float, growth: float, appended: float,
            head: float = 0.0, margin: float = 0.0) -> bool:
        """Whether to rebuild now: the rent ``paid`` since the last rebuild reached the
        cost of writing the rebuilt view, or appending one more delta (about ``margin``)
        could pass the limit."""
        if head + view + appended + margin > self.limit:
            return True
        return paid > 0 and paid >= self.rates.write * (view + growth)


def schedule(deltas: Sequence[float], compact: Sequence[float], rule: RebuildRule,
             view: float = 0.0) -> list[int]:
    """The turns (1-based) after which :class:`RebuildRule` rebuilds on a run whose turn
    ``i`` appends a delta of size ``deltas[i-1]`` and adds ``compact[i-1]`` to a rebuilt
    view (``view``: the view before the first turn). Each decision uses only the turns
    before it, as the strategy does."""
    out: list[int] = []
    paid = growth = appended = 0.0
    for pos, (d, k) in enumerate(zip(deltas, compact, strict=True), 1):
        if rule.due(paid, view, growth, appended):
            out.append(pos)
            view, paid, growth, appended = view + growth + k, 0.0, 0.0, 0.0
            continue
        appended += d
        growth += k
        paid += rule.rent(appended, growth)
    return out


# -- what a rebuild keeps ------------------------------------------------------------------


def _turn_refs(turn: Turn) -> tuple[frozenset[str], frozenset[str]]:
    """``(shown, used)``: the names a turn's output showed, and those its own message
    (the assistant's text and tool calls on a transcript, the program otherwise) used."""
    if turn.messages:
        said = "\n".join(content_text(m) + " " + " ".join(
            str(c.get("function", {}).get("arguments", "")) for c in m.get("tool_calls") or ())
            for m in assistant_messages(turn))
        return refs(feedback_text(turn)), refs(said)
    shown = refs("\n".join(turn.prints)) if turn.prints else frozenset()
    if not turn.success and turn.result is not None:
        shown |= refs(str(turn.result))
    return shown, refs(turn.program or "")


#: a compact delta shows each tool call's arguments with strings cut to this many
#: characters (and collections to 3 items): enough to say what the call acted on
COMPACT_ARG_CHARS = 24

#: a name the outputs of at least this many turns showed is recurring
RECURRING = 2


def compact_arg(value: Any, ctx: RenderContext) -> str:
    """A tool call's argument as a compact delta shows it: strings cut to
    :data:`COMPACT_ARG_CHARS` characters and collections to 3 items, unless that is not
    shorter than the argument as the tool-call section shows it (``ctx.call_args``): a
    cut that saves nothing (``"AUD-2026-11"`` as ``"AUD-2026-1..."``) would only make the
    latest turn send the call again in full (:meth:`PriceScheduled.rest`)."""
    cut, full = ctx.to_clojure(value, 3, COMPACT_ARG_CHARS), ctx.call_args([value])
    return cut if len(cut) < len(full) else full


def names_in_use(turns: Sequence[Turn], ctx: RenderContext) -> list[str]:
    """The names, paths and numbers that a turn's output showed and a later turn's own
    message used, most recently used first (then the most used first); then those that
    the outputs of several turns showed (recurring), the most frequent first.

    The tallies of the last turns asked about are kept for the run (one slot, with its
    first turn): the next rebuild's turns start with them, so only its new turns are
    walked."""
    walked = turns if type(turns) is tuple else tuple(turns)
    if not walked:
        return []
    origin: dict[str, int] = {}
    last: dict[str, int] = {}
    count: dict[str, int] = {}
    start = 0
    # [the turns walked, origin, last, count]
    slot: list[Any] = ctx.per_turn(walked[0], ("price-scheduled.names-walk",), list)
    if slot and len(slot[0]) <= len(walked) and same_turns(slot[0], walked) == len(slot[0]):
        # the kept tallies are never changed: copies go on from them
        start, origin, last, count = len(slot[0]), dict(slot[1]), dict(slot[2]), dict(slot[3])
    for pos in range(start + 1, len(walked) + 1):
        turn = walked[pos - 1]
        shown, used = ctx.per_turn(turn, ("price-scheduled.refs",), partial(_turn_refs, turn))
        for name in (used & origin.keys() if len(used) < len(origin) else
                     [n for n in origin if n in used]):
            last[name] = pos
            count[name] = count.get(name, 0) + 1
        for name in shown:
            origin[name] = origin.get(name, 0) + 1
    slot[:] = (walked, origin, last, count)
    used_first = sorted(last, key=lambda n: (-last[n], -count[n], n))
    recurring = sorted((n for n, k in origin.items() if k >= RECURRING and n not in last),
                       key=lambda n: (-origin[n], n))
    return used_first + recurring


class _PricedView(_CheckpointView):
    """``checkpoint-coalesced``'s view, laid out so that a rebuild shares the longest
    prefix with the view before it, plus the names in use (:func:`names_in_use`) that
    the rest of it does not show, up to ``names`` of them.

    Right after the stable head come the older turns' key lines (:meth:`earlier`), a
    section later rebuilds only append to (a turn's entry, its key lines given the
    names seen before it, never changes once it is old); then ``user/``, which changes
    only when the agent defines something or a value changes type; then the sections
    that change from one rebuild to the next (the tool calls: on PTC-Lisp the latest
    turn's, :meth:`latest_calls`; the recent turns' output: on PTC-Lisp the latest
    turn's; the names in use, most recently used first; the turns left). So a rebuild
    re-reads the stable head, the older turns and, when unchanged, ``user/`` from the
    cache and writes only what changed (``PriceScheduled.cache_breakpoints`` marks each
    end)."""

    names: int = 150

    def old_turns(self, count: int, ctx: RenderContext) -> int:
        """How many leading turns of a view of ``count`` turns are old (shown as key lines
        only, in :meth:`earlier`): on a transcript, all but the last ``println_limit``;
        otherwise all but the last. A PTC-Lisp turn's first and last lines were shown by
        its compact delta in every prompt from the turn to this rebuild; the view does
        not show them a second time over the next interval (``checkpoint-coalesced``'s
        age tier), and the append-only part then reaches the latest turn, so the next
        rebuild re-reads all of it from the cache."""
        if ctx.is_transcript:
            return max(0, count - self.println_limit)
        return max(0, count - 1)

    def earlier(self, turns: Sequence[Turn], ctx: RenderContext, old: int) -> str | None:
        """The key lines of the first ``old`` turns' output, turn by turn (a turn without
        any is left out), or None when there are none."""
        outputs = self._outputs(turns, ctx, range(old), lambda k: 0, 0)
        if not outputs:
            return None
        return ctx.template("price_scheduled/earlier_outputs.j2", outputs=outputs)

    def _outputs(self, turns: Sequence[Turn], ctx: RenderContext, ks: range,
                 print_lines: Callable[[int], int | None],
                 feedback_lines: int | None) -> list[dict[str, Any]]:
        """``{"number", "text"}`` of each turn ``turns[k]`` (k in ``ks``) that shows
        something: a transcript turn's feedback cut to ``feedback_lines``, a PTC-Lisp
        turn's prints cut to ``print_lines(k)`` (a failed turn or one without prints is
        left out)."""
        seen = self._names_before(turns)
        first = first_tool_turn(turns) if ctx.is_transcript else 0
        outputs = []
        for k in ks:
            t = turns[k]
            if ctx.is_transcript:
                text = self._turn_text(t, ctx, "outputs" if k + 1 >= first else "feedback",
                                       feedback_lines, seen[k])
            elif t.success and t.prints:
                text = self._turn_text(t, ctx, "prints", print_lines(k), seen[k])
            else:
                continue
            if text:
                outputs.append({"number": t.number, "text": text})
        return outputs

    def latest_calls(self, turns: Sequence[Turn], ctx: RenderContext) -> str | None:
        """The tool calls of a PTC-Lisp view (turn by turn): how many calls of each tool
        the turns before the latest made (so the agent knows what it already did, and
        does not repeat a side effect), then the latest turn's calls as its compact delta
        shows them (arguments cut short; up to ``tool_call_limit``); None when no turn
        made any. An older turn's calls with their arguments were shown by its compact
        delta in every prompt from that turn to this rebuild; the view does not list them
        again for the next interval (the newest ``tool_call_limit`` calls of
        ``checkpoint-coalesced``, a sliding window that every rebuild rewrites). The
        latest turn's are listed: when it failed, the call that failed is what the open
        error is about."""
        if not turns or not self.tool_call_limit:
            return None
        counts: dict[str, int] = {}
        for turn in turns[:-1]:
            for call in turn.tool_calls:
                counts[call.name] = counts.get(call.name, 0) + 1
        latest = turns[-1]
        calls = ctx.per_turn(latest, ("price-scheduled.calls",),
                             lambda: tuple({"name": c.name, "args": " ".join(
                                 compact_arg(a, ctx) for a in c.args)} for c in latest.tool_calls))
        if not counts and not calls:
            return None
        return ctx.template("price_scheduled/latest_calls.j2", number=latest.number,
                            counts=list(counts.items()), calls=calls[:self.tool_call_limit])

    def names_section(self, turns: Sequence[Turn], ctx: RenderContext, shown: str,
                      head: str = "") -> str | None:
        """The ``;; Names in use`` section, or None when there is nothing to add.

        ``head``: a text every rebuild of the run starts ``shown`` with (the mission),
        before a line break or the end: whether it shows a name is remembered, and only
        the rest of ``shown`` is searched (a name of word characters and ``.-/``, as
        :func:`refs` finds them, never spans a line break)."""
        if not self.names:
            return None
        rest = shown
        if head and shown.startswith(head) and shown[len(head):len(head) + 1] in ("", "\n"):
            rest = shown[len(head):]
        else:
            head = ""
        listed = []
        for name in names_in_use(turns, ctx):
            if len(listed) >= self.names:
                break
            if head and _WORD.fullmatch(name):
                if not (_shows_in_head(head, name) or shows_name(rest, name)):
                    listed.append(name)
            elif not shows_name(shown, name):
                listed.append(name)
        if not listed:
            return None
        return ctx.template("price_scheduled/names.j2", names=listed)

    def _recent_outputs(self, turns: Sequence[Turn], ctx: RenderContext,
                        old: int) -> str | None:
        """The Output section of the turns after the first ``old`` (on PTC-Lisp, the latest
        turn only): the last one as a delta shows it, the others their first and last
        ``turn_lines`` lines plus key lines (a transcript's recent turns: their feedback
        cut to head plus tail)."""
        last = len(turns) - 1
        outputs = self._outputs(turns, ctx, range(old, len(turns)),
                                lambda k: None if k == last else self.turn_lines, None)
        if not outputs:
            return None
        return ctx.template("checkpoint_coalesced/turn_outputs.j2", outputs=outputs)

    def transcript_content(self, turns: Sequence[Turn], ctx: RenderContext) -> str:
        """Mission, the older turns' key lines, the tool calls made, the last
        ``println_limit`` turns' feedback cut to head plus tail, the user's own words,
        then the names in use."""
        head = ""
        if not self.turn_lines:
            text = super().transcript_content(turns, ctx)
        else:
            old = self.old_turns(len(turns), ctx)
            parts = [mission_text(ctx).rstrip("\n"), self.earlier(turns, ctx, old),
                     tool_calls(turns, ctx, self.tool_call_limit),
                     self._recent_outputs(turns, ctx, old), words_section(turns, ctx)]
            text = "\n\n".join(p for p in parts if p)
            head = parts[0]
        extra = self.names_section(turns, ctx, text, head)
        return f"{text}\n\n{extra}" if extra else text

    def output_section(self, turns: Sequence[Turn], ctx: RenderContext) -> str | None:
        """The recent turns' Output section (all turns' with ``turn_lines=0``), then the
        names in use."""
        if not self.turn_lines:
            section = super().output_section(turns, ctx)
            earlier = None
        else:
            old = self.old_turns(len(turns), ctx)
            section = self._recent_outputs(turns, ctx, old)
            earlier = self.earlier(turns, ctx, old)
        calls = (self.latest_calls(turns, ctx) if self.turn_lines
                 else ctx.tool_calls(turns, self.tool_call_limit))
        shown = "\n".join([earlier or "", section or "", calls or ""])
        extra = self.names_section(turns, ctx, shown)
        if extra is None:
            return section
        return f"{section}\n\n{extra}" if section else extra

    def user_content(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                     ctx: RenderContext, *, turns_left: int,
                     failed_attempt: str | None) -> str:
        """The USER message: the stable head, the older turns' key lines, then the
        sections that change (``price_scheduled/user.j2``)."""
        earlier = (self.earlier(turns, ctx, self.old_turns(len(turns), ctx))
                   if self.turn_lines else None)
        sections = self.user_sections(turns, memory, ctx, turns_left=turns_left,
                                      failed_attempt=failed_attempt)
        if self.turn_lines:
            sections["tool_calls"] = self.latest_calls(turns, ctx)
        return ctx.template("price_scheduled/user.j2", earlier=earlier, **sections)


def rest_of_row(row: str, shown: str | None) -> str:
    """``row`` as the rest of a turn's output shows it, when ``shown`` (the same row as
    the compact delta cut it, ending in ``...``) came first: ``...`` and the rest of the
    row from the start of the word the cut split, so no word is shown cut."""
    if shown is None or not shown.endswith("...") or not row.startswith(shown[:-3]):
        return row
    start = row.rfind(" ", 0, len(shown) - 3) + 1
    return "..." + row[start:] if start else row


def _rest_text(count: int, shown: Mapping[int, str], above: Mapping[int, str],
               ctx: RenderContext) -> str:
    """The ``shown`` rows of an output of ``count`` lines, in order; each run of lines
    left out is one line: ``[... N lines shown above ...]`` for lines in ``above`` (the
    compact delta's), ``[... N lines elided ...]`` for the others."""
    out: list[str] = []
    gap: list[int] = []

    def close() -> None:
        if gap:
            kind = "price_scheduled/above.j2" if gap[0] in above else "history/elided.j2"
            out.append(ctx.template(kind, count=len(gap), unit="line"))
            gap.clear()

    for i in range(count):
        if i in shown:
            close()
            out.append(shown[i])
        else:
            if gap and (gap[0] in above) != (i in above):
                close()
            gap.append(i)
    close()
    return "\n".join(out)


# -- the strategy ----------------------------------------------------------------------------


class _Priced(_Prefix):
    """A prefix state with what the rule needs: the size of the view at the last
    rebuild (``view``), what the turns since would add to it (``growth``), the rent paid
    since (``paid``), the largest delta of the run (``widest``) and the tool calls made
    (``calls``); and the last turn's compact delta (``compact``; ``appended`` counts
    compact deltas, the ones later prompts re-read)."""

    __slots__ = ("calls", "compact", "growth", "head", "paid", "rest", "rule", "view", "widest")

    def __init__(self, before: _Prefix | None, seen: frozenset[str], c: int, previous: int,
                 appended: int, delta: list[Message] | None, *, rule: RebuildRule,
                 view: float, growth: float, paid: float, widest: int, head: int,
                 calls: int, compact: list[Message] | None = None,
                 rest: list[Message] | None = None) -> None:
        super().__init__(before, seen, c, previous, appended, delta)
        self.calls = calls  # the tool calls these turns made
        self.compact = compact  # the turn's delta once a later turn follows it
        self.rest = rest  # while it is the latest: what its delta shows beyond its compact
        self.rule = rule
        self.view, self.growth, self.paid, self.widest, self.head = (
            view, growth, paid, widest, head)


class PriceScheduled(CheckpointCoalesced):
    """The coalesced view, rebuilt when re-reading its stale part has cost as much as
    writing it anew (ski rental on ``ctx.price``); compact deltas appended in between.

    Options: ``max_tokens`` (200000, >= 1000): a prompt that could pass this many tokens
    (about four characters each) rebuilds; ``names`` (150, >= 0): a rebuilt view lists
    up to this many names, paths and numbers that earlier outputs showed and the agent
    went on to use, most recently used first (0: none); ``output_lines`` (12, >= 1) and
    ``key_lines`` (4, >= 0) cut a long output in the latest turn's delta to its first and
    last lines plus the lines that first showed a name; ``turn_lines`` (1) and
    ``line_chars`` (100) cut it in a compact delta (a PTC-Lisp turn once a later turn
    follows it) and in the rebuilt view; ``println_limit`` (6), ``tool_call_limit`` (20)
    and ``errors`` (``"last"`` / ``"pairs"``) shape the rebuilt view as in
    ``checkpoint-coalesced``. No option says how often to rebuild: that follows from the
    price and the run.
    """

    name = "price-scheduled"

    def __init__(self, *, max_tokens: int = 200_000, names: int = 150, output_lines: int = 12,
                 key_lines: int = 4, turn_lines: int = 1, line_chars: int = 100,
                 println_limit: int = 6, tool_call_limit: int = 20,
                 errors: str = "last") -> None:
        super().__init__(every=1, delta_chars=0, output_lines=output_lines,
                         println_limit=println_limit, tool_call_limit=tool_call_limit,
                         errors=self.check_choice("errors", errors, ERROR_MODES),
                         turn_lines=turn_lines, line_chars=line_chars, key_lines=key_lines)
        self.max_tokens = self.check_int("max_tokens", max_tokens, minimum=1000)
        self.names = self.check_int("names", names)
        view = _PricedView(println_limit=self.println_limit,
                           tool_call_limit=self.tool_call_limit, errors=self.errors)
        view.output_lines, view.turn_lines = self.output_lines, self.turn_lines
        view.line_chars, view.keys, view.names = self.line_chars, self.key_lines, self.names
        self._coalesced = view

    def rule(self, ctx: RenderContext) -> RebuildRule:
        """The rebuild rule under ``ctx``'s price, in characters."""
        return RebuildRule(rates(ctx), self.max_tokens * CHARS_PER_TOKEN)

    def _key(self, ctx: RenderContext, turns: Sequence[Turn]) -> tuple[Any, ...]:
        return (*super()._key(ctx, turns), rates(ctx), self.names)

    def _due_after(self, node: _Prefix, pos: int) -> bool:
        if not isinstance(node, _Priced):  # the root: nothing to rebuild yet
            return False
        return node.rule.due(node.paid, node.view, node.growth, node.appended, node.head,
                             node.widest)

    def compact_size(self, turns: Sequence[Turn], pos: int, ctx: RenderContext,
                     seen: frozenset[str], calls_before: int = 0) -> int:
        """About what the ``pos``-th turn adds to a rebuilt view: its output's key lines
        (the same key lines the view shows, made once per turn) and, on a transcript (or
        with ``turn_lines=0``), its tool calls while the view's tool-call section, which
        lists the newest ``tool_call_limit`` calls, is not full (``calls_before``: the
        calls the turns before it made); once it is, a new call takes an older one's
        place. A PTC-Lisp view turn by turn shows the latest turn's calls only
        (:meth:`_PricedView.latest_calls`): an older turn's calls add nothing to it."""
        turn = turns[pos - 1]
        view = self._coalesced
        if turn.messages:
            kind = "outputs" if words_at(turns, pos) else "feedback"
            text = view._turn_text(turn, ctx, kind, 0, seen)
        elif turn.success and turn.prints:
            text = view._turn_text(turn, ctx, "prints", 0, seen)
        else:
            text = ""
        lists = turn.messages or not self.turn_lines
        room = max(0, self.tool_call_limit - calls_before) if lists else 0
        calls = sum(len(c.name) + min(len(str(c.args)), 300) + 8
                    for c in turn.tool_calls[:room])
        return len(text) + calls + (16 if text else 0)

    def _step(self, before: _Prefix, turns: Sequence[Turn], pos: int,
              ctx: RenderContext) -> _Prefix:
        names = turn_names(turns[pos - 1])
        seen = before.seen | names if names else before.seen
        rule = self.rule(ctx)
        if isinstance(before, _Priced):
            view, growth, paid, widest, head, calls = (
                before.view, before.growth, before.paid, before.widest, before.head,
                before.calls)
        else:
            head = len(ctx.system_prompt) + len(ctx.mission) + sum(
                len(content_text(m)) for m in ctx.preamble)
            view, growth, paid, widest, calls = 0.0, 0.0, 0.0, 0, 0
        k = self.compact_size(turns, pos, ctx, before.seen, calls)
        calls += len(turns[pos - 1].tool_calls)
        if self._due_after(before, pos):
            return _Priced(before, seen, pos, before.c, 0, None, rule=rule, view=view + growth + k,
                           growth=0.0, paid=0.0, widest=widest, head=head, calls=calls)
        delta = self.delta(ctx, turns, pos, {pos - 1: before.seen})
        compact = self.compact_delta(ctx, turns, pos, before.seen, delta)
        rest = None if compact is delta else self.rest(ctx, turns, pos, before.seen)
        if rest is not None and _size(rest) >= _size(delta):
            rest = None  # never larger: the delta, and its compact delta next time
        size = _size(delta)
        appended = before.appended + _size(compact)
        growth += k
        return _Priced(before, seen, before.c, before.previous, appended, delta, rule=rule,
                       view=view, growth=growth, paid=paid + rule.rent(appended, growth),
                       widest=max(widest, size), head=head, calls=calls, compact=compact,
                       rest=rest)

    def compact_delta(self, ctx: RenderContext, turns: Sequence[Turn], pos: int,
                      seen: frozenset[str], delta: list[Message]) -> list[Message]:
        """The ``pos``-th turn once a later turn follows it: what it learned, in the
        view's terms (its tool calls on one line, their arguments cut short, the names it
        defined, its output as its first and last ``turn_lines`` lines plus key lines,
        its error), without the turns-left line the latest turn carries. A transcript
        turn keeps its delta (its messages answer each other's tool calls)."""
        turn = turns[pos - 1]
        if turn.messages:
            return delta
        previous = turns[pos - 2].memory if pos > 1 else {}
        defined = [{"text": f"{name} ({ctx.type_label(turn.memory[name])})"}
                   for name in defined_names(turn.memory, previous)]
        output = None
        if turn.success and turn.prints:
            output = key_lines("\n".join(turn.prints), ctx, lines=self.turn_lines,
                               keys=self.key_lines, line_chars=self.line_chars, seen=seen)
        result = ctx.template(
            "price_scheduled/compact_result.j2", defined=defined, output=output or None,
            error=None if turn.success else error_message(turn))
        calls = [{"name": c.name, "arg": " ".join(compact_arg(a, ctx) for a in c.args)}
                 for c in turn.tool_calls]
        called = ctx.template("price_scheduled/compact_call.j2", number=turn.number,
                              calls=calls)
        compact = [ctx.message("assistant", called), ctx.message("user", result)]
        return compact if _size(compact) < _size(delta) else delta

    def _rows(self, text: str, lines: int, line_chars: int, seen: frozenset[str],
              ctx: RenderContext) -> dict[int, str]:
        """The rows of ``text`` that :func:`key_lines` with these settings shows, by index
        (every row, uncut, when it keeps ``text`` whole)."""
        shown = key_rows(text, lines=lines, keys=self.key_lines, line_chars=line_chars,
                         seen=seen)
        if key_text(text, shown, ctx) == text:
            return dict(enumerate(text.split("\n")))
        return shown

    def rest(self, ctx: RenderContext, turns: Sequence[Turn], pos: int,
             seen: frozenset[str]) -> list[Message] | None:
        """What the ``pos``-th turn's delta shows beyond its compact delta, sent once
        after the compact delta while it is the latest turn: its tool calls in full when
        the compact delta cut an argument short, the output lines the delta shows and the
        compact delta does not (as the delta cuts them), and the turns-left line; None
        when the compact delta shows all of that but the turns-left line. So the compact
        delta that later prompts re-read is sent, and written to the cache, once, and
        nothing is sent twice in one prompt (but the word a cut row was cut in)."""
        turn = turns[pos - 1]
        cut = [{"name": c.name, "args": ctx.call_args(c.args)} for c in turn.tool_calls
               if any(compact_arg(a, ctx) != ctx.call_args([a]) for a in c.args)]
        output = None
        if turn.success and turn.prints:
            text = "\n".join(turn.prints)
            whole = self._rows(text, self.output_lines, DELTA_LINE_CHARS, seen, ctx)
            compact = self._rows(text, self.turn_lines, self.line_chars, seen, ctx)
            more = {i: rest_of_row(r, compact.get(i)) for i, r in whole.items()
                    if compact.get(i) != r}
            if more:
                output = _rest_text(text.count("\n") + 1, more, compact, ctx)
        if output is None and not cut:
            return None  # the compact delta shows it all: the delta stays whole
        called = ctx.template("price_scheduled/rest_call.j2", number=turn.number,
                              tool_calls=ctx.template("history/tool_calls.j2", calls=cut)
                              if cut else None)
        result = ctx.template("price_scheduled/rest_result.j2", output=output,
                              turns_left=ctx.turns_left_line(ctx.turns_left_after(turns, pos)))
        return [ctx.message("assistant", called), ctx.message("user", result)]

    def _latest(self, node: _Prefix) -> list[Message]:
        """The latest turn's messages: its compact delta and the rest (its delta when
        the compact delta is the delta)."""
        rest = getattr(node, "rest", None)
        if rest is None:
            return node.delta  # type: ignore[return-value]
        return [*node.compact, *rest]  # type: ignore[attr-defined]

    def to_messages(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                    ctx: RenderContext) -> list[Message]:
        """The view as of the last rebuild, the compact deltas of the turns since, and
        the latest turn: its compact delta then the rest of what its delta shows."""
        key = self._key(ctx, turns)
        nodes = self._prefixes(turns, ctx, key)
        messages = list(self._view(turns, nodes, ctx, key))
        later = nodes[nodes[-1].c + 1:]
        for node in later[:-1]:
            messages.extend(node.compact)  # type: ignore[attr-defined]
        if later:
            messages.extend(self._latest(later[-1]))
        return messages

    def _old_head(self, turns: Sequence[Turn], nodes: list[_Prefix], c: int,
                  ctx: RenderContext) -> str | None:
        """The head of the view rebuilt at the ``c``-th turn that later rebuilds repeat:
        the stable head, then its older turns' key lines (None without any); made once
        per run and rebuild."""
        if not c:
            return None
        return self._per_rebuild("old-head", self._make_old_head, turns, nodes, c, ctx)

    def _per_rebuild(self, name: str, make: Callable[..., str | None], turns: Sequence[Turn],
                     nodes: list[_Prefix], c: int, ctx: RenderContext) -> str | None:
        """``make(turns, nodes, c, ctx)``, made once per run, rebuild and ``name``."""
        key = (name, self._key(ctx, turns), id(nodes[c]), tuple(map(id, ctx.preamble)),
               ctx.mission, ctx.system_prompt)
        return ctx.per_turn(turns[c - 1], key, lambda: (nodes[c], make(turns, nodes, c, ctx)))[1]

    def _make_old_head(self, turns: Sequence[Turn], nodes: list[_Prefix], c: int,
                       ctx: RenderContext) -> str | None:
        view = copy(self._coalesced)
        view.recent_from = nodes[c].previous
        old = view.old_turns(c, ctx)
        view.seen = [node.seen for node in nodes[:old + 1]]
        earlier = view.earlier(turns[:old], ctx, old)
        if earlier is None:
            return None
        lead = (mission_text(ctx).rstrip("\n") if ctx.is_transcript
                else view.stable_head(ctx))
        return f"{lead}\n\n{earlier}" if lead else earlier

    def _slow_head(self, turns: Sequence[Turn], nodes: list[_Prefix], c: int,
                   ctx: RenderContext) -> str | None:
        """The head of the PTC-Lisp view rebuilt at the ``c``-th turn up to the end of its
        ``user/`` prelude: :meth:`_old_head`, then the namespaces, which change only when
        the agent defines something or a value changes type, so a later rebuild often
        repeats them too (None on a transcript or without a prelude)."""
        if not c or ctx.is_transcript:
            return None
        return self._per_rebuild("slow-head", self._make_slow_head, turns, nodes, c, ctx)

    def _make_slow_head(self, turns: Sequence[Turn], nodes: list[_Prefix], c: int,
                        ctx: RenderContext) -> str | None:
        view = self._coalesced
        namespaces = ctx.namespaces(turns[c - 1].memory, show_samples=not has_printed(turns[:c]),
                                    minimal=view.minimal, stable=False)
        if not namespaces:
            return None
        lead = self._old_head(turns, nodes, c, ctx) or view.stable_head(ctx)
        return "\n\n".join(p for p in (lead, *namespaces) if p)

    def _fn_head(self, turns: Sequence[Turn], nodes: list[_Prefix], c: int,
                 ctx: RenderContext) -> str | None:
        """The head of the PTC-Lisp view rebuilt at the ``c``-th turn up to the end of the
        functions its ``user/`` prelude lists: :meth:`_slow_head` less the values, whose
        labels (``list[19]``) change with the data, where the functions change only when
        the agent defines one; None without a function."""
        slow = self._slow_head(turns, nodes, c, ctx)
        if slow is None:
            return None
        at = slow.rfind(USER_HEADER)
        if at < 0:
            return None
        end = slow.find("\n", at)
        cut = None
        while end >= 0 and slow.startswith("(", end + 1):
            cut = slow.find("\n", end + 1)
            if cut < 0:
                return None  # the functions end the head: the slow head is the same mark
            end = cut
        return slow[:cut] if cut is not None else None

    @staticmethod
    def _shown_before(view: Sequence[Message], later: Sequence[_Prefix]) -> int:
        """How many leading messages of the prompt (the ``view``, then the turns since the
        rebuild, ``later``) the prompt before it showed the same way: the view and the
        compact deltas of all but the latest turn, the turn before the latest included
        when that prompt showed it compact (with its rest) or whole as its delta."""
        shown = len(view) + sum(len(n.compact) for n in later[:-2])  # type: ignore[attr-defined]
        if len(later) >= 2:
            before = later[-2]
            if before.rest is not None or before.compact is before.delta:  # type: ignore[attr-defined]
                shown += len(before.compact)  # type: ignore[attr-defined]
        return shown

    def cache_breakpoints(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                          ctx: RenderContext) -> list[Breakpoint]:
        """The end of the stable head, the end of the older turns' key lines and of
        ``user/`` (the parts of the view the next rebuild may repeat), the end of the view
        (unless the next prompt rebuilds it), and the end of the compact deltas, the
        latest turn's included: the next prompt repeats them and appends its own. The
        rest of the latest turn's delta after its compact delta is not marked: it is sent
        once, never re-read, so writing it to the cache would be paid for nothing. Before
        a rebuild only the stable head and the older turns are repeated: then the end of
        what the previous prompt showed the same way is marked, to read what it cached
        and write nothing the next prompt would not repeat. A rebuild
        also marks where the older turns, the functions of ``user/`` and ``user/`` of the
        view before it ended, when it repeats them: it reads up to there from the cache
        and writes only the rest. Of more than four marks (the provider keeps four) it
        keeps the longest it can read, the end, then its own (DESIGN §11)."""
        key = self._key(ctx, turns)
        nodes = self._prefixes(turns, ctx, key)
        last = nodes[-1]
        later = nodes[last.c + 1:]
        messages = self._view(turns, nodes, ctx, key)
        if ctx.is_transcript:
            head: list[Breakpoint] = transcript_head_breakpoints(ctx)
        else:
            head = [(0, None), (1, len(self._coalesced.stable_head(ctx)))]
        points: list[Breakpoint] = []
        reread = len(messages) + sum(len(n.compact) for n in later[:-1])  # type: ignore[attr-defined]
        end = reread + (len(self._latest(later[-1])) if later else 0) - 1
        if later and getattr(later[-1], "rest", None) is not None:
            reread += len(later[-1].compact)  # type: ignore[attr-defined]
        elif not later or later[-1].compact is later[-1].delta:  # type: ignore[attr-defined]
            reread = end + 1  # the view alone, or a delta that stays (a transcript turn's)
        # else: the latest delta, shown compact by the next prompt, is not re-read
        moves = self._due_after(last, len(turns) + 1)
        if moves:  # the next prompt rebuilds
            # the end of what the prompt before showed as this one does, to read what it
            # wrote; nothing after it is written (the next prompt repeats none of it)
            points.append((self._shown_before(messages, later) - 1, None))
        else:
            points += [(len(messages) - 1, None), (reread - 1, None)]
        at = len(preamble_head(ctx)) if ctx.is_transcript else 1
        view = messages[at]["content"] if at < len(messages) else None
        mark = partial(self._mark, view, at)
        if later:
            return _ordered([*head, *points, *mark([self._old_head(turns, nodes, last.c, ctx)])])
        # a rebuild: it may repeat the view before it up to any of its marks, and marks
        # its own for a later rebuild (which may change the functions or values of user/)
        reads = [*head, *mark([self._old_head(turns, nodes, last.previous, ctx),
                                     self._fn_head(turns, nodes, last.previous, ctx),
                                     self._slow_head(turns, nodes, last.previous, ctx)])]
        writes = mark([self._old_head(turns, nodes, last.c, ctx)] + (
            [] if moves else [self._fn_head(turns, nodes, last.c, ctx),
                              self._slow_head(turns, nodes, last.c, ctx)]))
        marks = _ordered([*points, *reads, *writes])
        if len(marks) <= MAX_ANTHROPIC_BREAKPOINTS:
            return marks
        # the provider keeps four: the longest mark it can read, the end, then the marks
        # a later rebuild most likely repeats (the older turns change least, then the
        # functions of user/, then its values), then the longest of the others
        kept = dict.fromkeys([_ordered(reads)[-1], *points, *writes, *reversed(marks)])
        return _ordered(list(kept)[:MAX_ANTHROPIC_BREAKPOINTS])

    @staticmethod
    def _mark(view: Any, at: int, heads: Sequence[str | None]) -> list[Breakpoint]:
        """The marks at the end of each of ``heads`` that the view (the content of its
        ``at``-th message) starts with and is longer than."""
        return [(at, len(head)) for head in heads
                if head and isinstance(view, str) and len(head) < len(view)
                and view.startswith(head)]


def _ordered(points: Sequence[Breakpoint]) -> list[Breakpoint]:
    """``points`` without duplicates, shortest prefix first (and none before the first
    message: the end of a view that is empty, a run's without a mission before its
    first turn, marks nothing)."""
    return sorted({p for p in points if p[0] >= 0}, key=lambda p: (p[0], p[1] is None, p[1] or 0))


@hookimpl
def register_strategies(register: Callable[[type], None]) -> None:
    """Register ``price-scheduled``."""
    register(PriceScheduled)


__all__ = ["PriceScheduled", "Rates", "RebuildRule", "names_in_use", "rates", "refs", "rest_of_row",
           "schedule", "shows_name"]
