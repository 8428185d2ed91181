"""Built-in plugin: ``checkpoint-coalesced``, the coalesced view rebuilt only at checkpoints.

``single-user-coalesced`` rewrites its one USER message on every turn, so a provider
can cache only the system prompt and the stable head. This strategy rebuilds that
coalesced view (namespaces, tool calls, output) only at checkpoints: every
``every`` turns, or sooner once the deltas appended since the last checkpoint pass
``delta_chars`` characters. Between checkpoints each turn is appended as a compact
delta, an ASSISTANT/USER pair saying what the turn called, defined, printed (cut to
head plus tail) or its error, never its code. So the prompt is append-only between
checkpoints and everything up to the last delta is served from cache (DESIGN §11).

Layout: ``[SYSTEM, USER(coalesced view as of the last checkpoint, with the turns
left at that point)]`` then one delta pair per later turn, the last one ending with
the current turns-left line. The view is ``single-user-coalesced``'s, except that its
Output section lists every earlier turn's output cut to its first and last lines
(``turn_lines``): on long runs the facts an agent goes back to (ids, field names from
an early listing, a config diff) are printed early and would otherwise be pushed out
by the last ``println_limit`` println calls. With ``turn_lines=0`` the prompt right
after a checkpoint is exactly ``single-user-coalesced``'s. On an imported transcript
the coalesced view is ``single-user-coalesced``'s transcript view (mission, tool calls made, last
outputs) and a delta is the turn's original messages with each tool result cut to
head plus tail, so every tool call stays answered.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from copy import copy
from dataclasses import replace
from functools import lru_cache, partial
from typing import Any

from turnpress.core.compression import (
    Breakpoint,
    RenderContext,
    Strategy,
    defined_names,
    error_message,
)
from turnpress.core.hookspecs import hookimpl
from turnpress.core.model import Message, Turn
from turnpress.plugins._imported_messages import (
    content_text,
    cut_feedback,
    cut_middle,
    feedback_text,
    first_tool_turn,
    line_limits,
    mission_text,
    output_text,
    tool_calls,
    transcript_head_breakpoints,
    words_at,
    words_section,
)
from turnpress.plugins.full_history import TurnWalk
from turnpress.plugins.single_user_coalesced import ERROR_MODES, SingleUserCoalesced

_QUOTED = re.compile(r'"[^"\n]*"')
#: a name with an inner ``_`` or ``.`` (a field, a config key, a user, a version), not
#: part of an e-mail address or a quoted string
_NAME = re.compile(r"(?<![\w@.\-])[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+(?![\w@])")


@lru_cache(maxsize=1 << 16)
def line_names(line: str) -> frozenset[str]:
    """The names ``line`` shows outside quoted strings (``balance_cents``,
    ``pool.max_connections``, ``dana.r``, ``v2.14.0``)."""
    return frozenset(_NAME.findall(_QUOTED.sub('""', line)))


@lru_cache(maxsize=1 << 14)
def output_names(text: str) -> frozenset[str]:
    """The names every line of ``text`` shows (see :func:`line_names`)."""
    return frozenset().union(*(line_names(r) for r in text.split("\n")))


def _cut(row: str, chars: int) -> str:
    return row if len(row) <= chars else row[:chars - 3] + "..."


def _names_end(row: str, names: frozenset[str]) -> int:
    """Where the last of ``names`` ends in ``row`` (outside quoted strings)."""
    blanked = _QUOTED.sub(lambda m: '"' + " " * (len(m.group(0)) - 2) + '"', row)
    return max((m.end() for m in _NAME.finditer(blanked) if m.group(0) in names), default=0)


def key_rows(text: str, *, lines: int, keys: int, line_chars: int,
             seen: frozenset[str] | set[str] = frozenset()) -> dict[int, str]:
    """The rows of ``text`` that :func:`key_lines` shows, by line index, each as cut
    (before the "never larger" check: see :func:`key_lines`)."""
    rows = text.split("\n")
    ends = set(range(min(lines, len(rows)))) | set(range(max(0, len(rows) - lines), len(rows)))
    shown = {i: _cut(rows[i], line_chars) for i in ends}
    if keys <= 0:
        return shown
    # the names known are ``seen`` and ``kept``'s (``seen``, a whole run's names, is
    # not copied: each row's few names are looked up in it)
    kept = set().union(*(line_names(r) for r in shown.values()))
    found = 0
    for i, row in enumerate(rows):
        if found >= keys:
            break
        if i in ends:
            continue
        new = line_names(row) - kept
        if new:
            new = new.difference(seen)
        if new:
            limit = min(max(line_chars, _names_end(row, new) + 4), 3 * line_chars)
            shown[i] = _cut(row, limit)
            kept |= line_names(shown[i])
            found += 1
    return shown


def rows_text(count: int, shown: Mapping[int, str], ctx: RenderContext) -> str:
    """The ``shown`` rows (by index) of a text of ``count`` lines, in order, each run of
    lines left out as one ``[... N lines elided ...]`` line."""
    out: list[str] = []
    gap = 0
    for i in range(count):
        if i not in shown:
            gap += 1
            continue
        if gap:
            out.append(ctx.template("history/elided.j2", count=gap, unit="line"))
            gap = 0
        out.append(shown[i])
    if gap:
        out.append(ctx.template("history/elided.j2", count=gap, unit="line"))
    return "\n".join(out)


def key_lines(text: str, ctx: RenderContext, *, lines: int, keys: int, line_chars: int,
              seen: frozenset[str] | set[str] = frozenset()) -> str:
    """``text``'s first and last ``lines`` lines plus, between them, up to ``keys`` key
    lines: each the first line to show a name (a field, a config key...) not in ``seen``
    nor in a line kept before it. Every line is cut to ``line_chars`` characters (a key
    line only after its new names, and at most to three times that); each run of lines
    left out is one ``[... N lines elided ...]`` line. ``lines=0`` with no key line gives
    ``""``. Never larger: returns ``text`` when the cut would not be shorter."""
    return key_text(text, key_rows(text, lines=lines, keys=keys, line_chars=line_chars,
                                   seen=seen), ctx)


def key_text(text: str, shown: Mapping[int, str], ctx: RenderContext) -> str:
    """What :func:`key_lines` gives for the rows ``shown`` of ``text`` (from
    :func:`key_rows`): ``""`` for none, else those rows (:func:`rows_text`), or ``text``
    itself when that would not be shorter."""
    if not shown:
        return ""
    cut = rows_text(text.count("\n") + 1, shown, ctx)
    return cut if len(cut) < len(text) else text


#: a delta's output lines are cut to this many characters
DELTA_LINE_CHARS = 200


def _size(messages: Sequence[Message]) -> int:
    return sum(len(content_text(m)) for m in messages)


def turn_names(turn: Turn) -> frozenset[str]:
    """The names one turn's output showed (a successful turn's prints; on a transcript,
    its feedback)."""
    if turn.messages:
        return output_names(feedback_text(turn))
    if turn.success and turn.prints:
        return output_names("\n".join(turn.prints))
    return frozenset()


def names_before(turns: Sequence[Turn]) -> list[frozenset[str]]:
    """``[k]``: the names the output of ``turns[:k]`` showed (successful turns only; on a
    transcript, the feedback of every turn)."""
    out = [frozenset[str]()]
    for t in turns:
        names = turn_names(t)
        out.append(out[-1] | names if names else out[-1])
    return out


class _Prefix:
    """What :class:`CheckpointCoalesced` knows after the first ``k`` turns of a run: one
    object per prefix of turns, remembered for the run (``RenderContext.per_turn`` on
    the prefix's last turn, keyed by the node before it), so its identity stands for
    the whole prefix. The root (no turn) is :data:`_ROOT`."""

    __slots__ = ("appended", "before", "c", "delta", "previous", "seen")

    def __init__(self, before: _Prefix | None, seen: frozenset[str], c: int, previous: int,
                 appended: int, delta: list[Message] | None) -> None:
        self.before = before  # keeps the node before alive: its id is in our key
        self.seen = seen  # the names the output of these turns showed
        self.c, self.previous, self.appended = c, previous, appended  # see _checkpoints
        self.delta = delta  # the last turn's delta (None when it made a checkpoint)


_ROOT = _Prefix(None, frozenset(), 0, 0, 0, None)


class _CheckpointView(SingleUserCoalesced):
    """``single-user-coalesced``'s view whose Output section goes turn by turn: the last
    turn's output as a delta shows it (``output_lines``); the turns since the checkpoint
    before (``recent_from``) their first and last ``turn_lines`` lines plus key lines;
    older turns only their key lines (lines that first showed a name). ``turn_lines=0``:
    ``single-user-coalesced``'s Output section."""

    turn_lines: int = 0
    line_chars: int = 160
    keys: int = 0
    recent_from: int = 0
    #: ``names_before(turns)`` when the caller has it (the walk's nodes: the same
    #: frozensets from one checkpoint to the next, so the memo below finds them at once)
    seen: list[frozenset[str]] | None = None

    def _names_before(self, turns: Sequence[Turn]) -> list[frozenset[str]]:
        seen = self.seen
        return seen if seen is not None and len(seen) == len(turns) + 1 else names_before(turns)

    def _turn_text(self, turn: Turn, ctx: RenderContext, kind: str, lines: int | None,
                   seen: frozenset[str]) -> str:
        """A turn's entry in the Output section: its feedback (``kind="feedback"``), its
        outputs without the user's own words (``kind="outputs"``, see
        ``_imported_messages.is_words``) or prints cut to head plus tail (``lines=None``), else
        its key lines; made once per run, turn, settings and names seen before it."""
        if lines is None:
            key: tuple[Any, ...] = ("checkpoint-coalesced.cut", kind, self.output_lines)
        else:
            key = ("checkpoint-coalesced.keys", kind, lines, self.keys, self.line_chars, seen)
        return ctx.per_turn(turn, key, partial(self._make_turn_text, turn, ctx, kind, lines,
                                               seen))

    def _make_turn_text(self, turn: Turn, ctx: RenderContext, kind: str, lines: int | None,
                        seen: frozenset[str]) -> str:
        if kind == "prints":
            text = "\n".join(turn.prints)
        else:
            text = feedback_text(turn) if kind == "feedback" else output_text(turn, True)
        if lines is None:
            return cut_middle(text, ctx, **line_limits(self.output_lines))
        return key_lines(text, ctx, lines=lines, keys=self.keys, line_chars=self.line_chars,
                         seen=seen)

    def transcript_content(self, turns: Sequence[Turn], ctx: RenderContext) -> str:
        """Mission, the tool calls made, then the output turn by turn: the last
        ``println_limit`` turns' feedback cut to head plus tail, older turns' key lines
        (``turn_lines=0``: ``single-user-coalesced``'s last outputs); then the user's own
        messages (``_imported_messages.words_section``), never cut."""
        if not self.turn_lines:
            return super().transcript_content(turns, ctx)
        seen = self._names_before(turns)
        outputs = []
        recent = len(turns) - self.println_limit
        first = first_tool_turn(turns)
        for k, t in enumerate(turns):
            kind = "outputs" if k + 1 >= first else "feedback"
            # an empty feedback gives "" either way
            text = self._turn_text(t, ctx, kind, None if k >= recent else 0, seen[k])
            if text:
                outputs.append({"number": t.number, "text": text})
        parts = [mission_text(ctx).rstrip("\n"),
                 tool_calls(turns, ctx, self.tool_call_limit),
                 ctx.template("checkpoint_coalesced/turn_outputs.j2", outputs=outputs)
                 if outputs else None,
                 words_section(turns, ctx)]
        return "\n\n".join(p for p in parts if p)

    def output_section(self, turns: Sequence[Turn], ctx: RenderContext) -> str | None:
        """The Output section: turn by turn (``turn_lines`` > 0), else the last println
        calls."""
        if not self.turn_lines:
            return super().output_section(turns, ctx)
        seen = self._names_before(turns)
        outputs = []
        for k, t in enumerate(turns):
            if not (t.success and t.prints):
                continue
            if k == len(turns) - 1:
                lines = None
            else:
                lines = self.turn_lines if k >= self.recent_from else 0
            text = self._turn_text(t, ctx, "prints", lines, seen[k])
            if text:
                outputs.append({"number": t.number, "text": text})
        if not outputs:
            return None
        return ctx.template("checkpoint_coalesced/turn_outputs.j2", outputs=outputs)


class CheckpointCoalesced(Strategy):
    """The coalesced view of ``single-user-coalesced``, rebuilt only at checkpoints;
    compact per-turn deltas appended in between (append-only, cache-friendly).

    Options: ``every`` (20, >= 1): a checkpoint every this many turns;
    ``delta_chars`` (24000, >= 0; 0: no limit): a checkpoint as soon as the deltas
    since the last one reach this many characters (about a quarter as many
    tokens); ``output_lines`` (20, >= 1): a long output in a delta (or, on a
    transcript, in the view) keeps this many lines at each end, plus key lines from
    its middle; ``key_lines`` (3, >= 0): at most this many key lines from a long
    output's middle, each the first line to show a name (``balance_cents``,
    ``pool.max_connections``) no earlier output showed; ``tool_call_limit`` (20) and
    ``errors`` (``"last"``/``"pairs"``) shape the coalesced view as in
    ``single-user-coalesced``; ``turn_lines`` (1, >= 0): the view's Output section goes
    turn by turn, in age tiers: the turns since the checkpoint before show their
    output cut to this many lines at each end plus key lines, older turns only their
    key lines (a turn with none is left out), and the last turn's as in a delta, so
    what an early turn printed (field names, config keys) is not pushed out by later
    prints, while the view stays small on long runs; ``line_chars`` (100): each line
    of the view's Output section is cut to this many characters; ``println_limit``
    (6): on a transcript, the view shows the last ``println_limit`` turns' feedback
    cut to head plus tail and older turns' key lines. ``turn_lines=0`` keeps
    ``single-user-coalesced``'s Output section (the last ``println_limit`` println
    calls), and then ``every=1`` is ``single-user-coalesced``.
    """

    name = "checkpoint-coalesced"

    def __init__(self, *, every: int = 20, delta_chars: int = 24000, output_lines: int = 20,
                 println_limit: int = 6, tool_call_limit: int = 20,
                 errors: str = "last", turn_lines: int = 1, line_chars: int = 100,
                 key_lines: int = 3) -> None:
        self.every = self.check_int("every", every, minimum=1)
        self.delta_chars = self.check_int("delta_chars", delta_chars)
        self.output_lines = self.check_int("output_lines", output_lines, minimum=1)
        self.println_limit = self.check_int("println_limit", println_limit)
        self.tool_call_limit = self.check_int("tool_call_limit", tool_call_limit)
        self.errors = self.check_choice("errors", errors, ERROR_MODES)
        self.turn_lines = self.check_int("turn_lines", turn_lines)
        self._coalesced = _CheckpointView(println_limit=println_limit,
                                          tool_call_limit=tool_call_limit, errors=errors)
        self._coalesced.output_lines = output_lines
        self._coalesced.turn_lines = turn_lines
        self.line_chars = self.check_int("line_chars", line_chars, minimum=4)
        self._coalesced.line_chars = self.line_chars
        self.key_lines = self.check_int("key_lines", key_lines)
        self._coalesced.keys = self.key_lines
        self._walk: TurnWalk[_Prefix] = TurnWalk()  # the prefix states of the last prompt

    # -- where the checkpoints are ---------------------------------------------------

    def checkpoints(self, turns: Sequence[Turn], ctx: RenderContext) -> tuple[int, bool]:
        """``(c, moves)``: the last checkpoint (how many of ``turns`` the coalesced view
        covers) and whether the next turn makes a new checkpoint.

        A turn makes a checkpoint when ``every`` turns ran since the last one, or
        when the deltas appended since then (before it) reached ``delta_chars``.
        Each decision depends only on earlier turns, so the prompt of turn n+1
        starts with the prompt of turn n unless turn n made a checkpoint.
        """
        c, _, moves = self._checkpoints(turns, ctx)
        return c, moves

    def _checkpoints(self, turns: Sequence[Turn], ctx: RenderContext) -> tuple[int, int, bool]:
        """``(c, previous, moves)``: :meth:`checkpoints` plus the checkpoint before ``c``."""
        last = self._prefixes(turns, ctx)[-1]
        return last.c, last.previous, self._due_after(last, len(turns) + 1)

    def _due_after(self, node: _Prefix, pos: int) -> bool:
        """Whether the ``pos``-th turn makes a checkpoint, given the state ``node`` after
        the turns before it (a strategy built on this one decides differently here)."""
        return self._due(pos, node.c, node.appended)

    def _due(self, pos: int, c: int, appended: int) -> bool:
        return pos - c >= self.every or (self.delta_chars > 0 and appended >= self.delta_chars)

    def _key(self, ctx: RenderContext, turns: Sequence[Turn]) -> tuple[Any, ...]:
        """What a prefix's state depends on besides its turns: this strategy's options,
        the view's settings and the run's turn budget (the deltas' turns-left lines; none
        when the turns left are not known: then no line shows it, and a live loop's
        prompts share their prefix states from one turn to the next)."""
        view = self._coalesced
        budget = ctx.turns_left + len(turns) if ctx.turns_left_known else None
        return (type(self), tuple(self.options.items()), type(view), view.println_limit,
                view.tool_call_limit, view.errors, view.output_lines, view.turn_lines,
                view.line_chars, view.keys, budget)

    def _prefixes(self, turns: Sequence[Turn], ctx: RenderContext,
                  key: tuple[Any, ...] | None = None) -> list[_Prefix]:
        """``[k]``: the state after ``turns[:k]`` (names seen, checkpoints, the k-th
        turn's delta), each made once per run and reused by later prompts (``key``:
        :meth:`_key`, when the caller has it)."""
        key = self._key(ctx, turns) if key is None else key

        def step(pos: int, before: list[_Prefix]) -> _Prefix:
            node = before[-1] if before else _ROOT
            return ctx.per_turn(turns[pos - 1], (key, id(node)),
                                partial(self._step, node, turns, pos, ctx))

        return [_ROOT, *self._walk.pieces(ctx, turns, key, step)]

    def _step(self, before: _Prefix, turns: Sequence[Turn], pos: int,
              ctx: RenderContext) -> _Prefix:
        """The state after the ``pos``-th turn, from the state ``before`` it."""
        names = turn_names(turns[pos - 1])
        seen = before.seen | names if names else before.seen
        if self._due_after(before, pos):
            return _Prefix(before, seen, pos, before.c, 0, None)
        delta = self.delta(ctx, turns, pos, {pos - 1: before.seen})
        return _Prefix(before, seen, before.c, before.previous,
                       before.appended + _size(delta), delta)

    # -- the pieces ------------------------------------------------------------------

    def delta(self, ctx: RenderContext, turns: Sequence[Turn], pos: int,
              seen: Sequence[frozenset[str]] | Mapping[int, frozenset[str]] | None = None
              ) -> list[Message]:
        """The compact messages standing for the ``pos``-th turn (1-based) after the
        last checkpoint: its output cut to its first and last ``output_lines`` lines plus
        up to ``key_lines`` lines that first showed a name. ``seen``: ``names_before(turns)``
        (or its item ``pos - 1``) when the caller has it."""
        turn = turns[pos - 1]
        if turn.messages:
            words = words_at(turns, pos)
            return cut_feedback(turn, ctx, words=words, **line_limits(self.output_lines))
        call = ctx.template("checkpoint_coalesced/delta_call.j2", number=turn.number,
                            tool_calls=ctx.tool_calls([turn], self.tool_call_limit))
        previous = turns[pos - 2].memory if pos > 1 else {}
        defined = [{"text": f"{name} ({ctx.type_label(turn.memory[name])})"}
                   for name in defined_names(turn.memory, previous)]
        output = None
        if turn.success and turn.prints:
            names = (seen if seen is not None else names_before(turns[:pos - 1]))[pos - 1]
            output = key_lines("\n".join(turn.prints), ctx, lines=self.output_lines,
                               keys=self.key_lines, line_chars=DELTA_LINE_CHARS, seen=names)
        result = ctx.template(
            "checkpoint_coalesced/delta_result.j2", defined=defined, output=output,
            error=None if turn.success else error_message(turn),
            turns_left=ctx.turns_left_line(ctx.turns_left_after(turns, pos)))
        return [ctx.message("assistant", call), ctx.message("user", result)]

    def coalesced(self, turns: Sequence[Turn], c: int, ctx: RenderContext,
                  previous: int = 0) -> list[Message]:
        """The view just after the ``c``-th turn (``previous``: the checkpoint before)."""
        at = replace(ctx, turns_left=ctx.turns_left_after(turns, c))
        memory = turns[c - 1].memory if c else {}
        view = copy(self._coalesced)
        view.recent_from = previous
        view.seen = [node.seen for node in self._prefixes(turns[:c], at)]
        return view.to_messages(turns[:c], memory, at)

    def _view(self, turns: Sequence[Turn], nodes: list[_Prefix], ctx: RenderContext,
              key: tuple[Any, ...] | None = None) -> list[Message]:
        """:meth:`coalesced` as of the last checkpoint, made once per run and checkpoint
        (the same message objects on every prompt until the next one; ``key``:
        :meth:`_key`, when the caller has it)."""
        c, previous = nodes[-1].c, nodes[-1].previous
        if not turns:
            return self.coalesced(turns, c, ctx, previous)
        # one slot per run and options, kept with the first turn: only the last
        # checkpoint's view is kept, not one per checkpoint passed (a long run's prompts
        # never ask for an earlier one again)
        options = self._key(ctx, turns) if key is None else key
        slot: list[Any] = ctx.per_turn(turns[0], ("view", options), list)
        anchor = (nodes[c], ctx.preamble)  # kept in the slot: their ids are in the key
        which = (id(nodes[c]), tuple(map(id, ctx.preamble)), ctx.mission, ctx.system_prompt)
        if not (slot and slot[0] == which):
            slot[:] = (which, anchor, self.coalesced(turns, c, ctx, previous))
        return slot[2]  # type: ignore[no-any-return]

    def to_messages(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                    ctx: RenderContext) -> list[Message]:
        """The coalesced view as of the last checkpoint, then one delta per later turn."""
        key = self._key(ctx, turns)
        nodes = self._prefixes(turns, ctx, key)
        messages = list(self._view(turns, nodes, ctx, key))
        for node in nodes[nodes[-1].c + 1:]:
            messages.extend(node.delta)  # type: ignore[arg-type]
        return messages

    def cache_breakpoints(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                          ctx: RenderContext) -> list[Breakpoint]:
        """The end of the stable head (system prompt, mission, ``tool/``, ``data/``), the
        end of the last checkpoint's coalesced view, and the end of the prompt.

        The end of the prompt is where a client puts its last ``cache_control``: it
        reads what the previous prompt cached. Before a checkpoint the next prompt
        does not repeat it (it rebuilds the view), so there only the stable head is
        a prefix later prompts share; the end marker still saves the re-read.
        """
        key = self._key(ctx, turns)
        nodes = self._prefixes(turns, ctx, key)
        moves = self._due_after(nodes[-1], len(turns) + 1)
        view = self._view(turns, nodes, ctx, key)
        if ctx.is_transcript:
            points: list[Breakpoint] = transcript_head_breakpoints(ctx)
        else:
            points = [(0, None), (1, len(self._coalesced.stable_head(ctx)))]
        if not moves and view:  # (a run without a mission may have an empty view)
            points.append((len(view) - 1, None))
        deltas = sum(len(node.delta) for node in nodes[nodes[-1].c + 1:])  # type: ignore[arg-type]
        points.append((len(view) + deltas - 1, None))
        return sorted(set(points), key=lambda p: (p[0], p[1] is None, p[1] or 0))


@hookimpl
def register_strategies(register: Callable[[type], None]) -> None:
    """Register ``checkpoint-coalesced``."""
    register(CheckpointCoalesced)
