"""Built-in plugin: ``full-history``, the uncompressed baseline (``compression=False``).

Every turn stays as the agent wrote it: ``[SYSTEM, USER(mission + tool/ + data/ +
turns left)]``, then per turn ASSISTANT(raw response) and USER(feedback + turns left).
An imported transcript is replayed exactly as it was sent: its preamble, then each
turn's original messages (DESIGN §10).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from itertools import chain
from operator import is_
from typing import Any, Generic, TypeVar

from turnpress.core.compression import RenderContext, Strategy
from turnpress.core.hookspecs import hookimpl
from turnpress.core.model import INSTRUCTION_ROLES, Message, Turn

#: the RenderContext.per_turn key of a turn's full-history pair
PAIR_KEY = ("full-history", "pair")

_T = TypeVar("_T")


def per_turn_after(ctx: RenderContext, turns: Sequence[Turn], pos: int, key: Hashable,
                   make: Callable[[], _T]) -> _T:
    """:meth:`RenderContext.per_turn` for a value of the ``pos``-th turn (1-based) that
    also depends on the turn before it (what it defined since): remembered with that
    turn, and made afresh when the turn follows another one."""
    previous = turns[pos - 2] if pos > 1 else None
    kept = ctx.per_turn(turns[pos - 1], (key, id(previous)), lambda: (previous, make()))
    return kept[1] if kept[0] is previous else make()


#: the last comparisons of two tuples of turns: (walked, turns, leading turns the same)
_COMPARED: list[tuple[tuple[Turn, ...], tuple[Turn, ...], int]] = []


def same_turns(walked: tuple[Turn, ...], turns: Sequence[Turn]) -> int:
    """How many leading ``turns`` are the objects of ``walked`` (one C-speed pass). Two
    tuples compared once are not compared again: the walks of every strategy of a prompt
    compare the same two (the previous prompt's turns and this one's)."""
    if turns is walked:
        return len(walked)
    if type(turns) is not tuple:
        return _leading_same(walked, turns)
    for done in _COMPARED:
        if done[0] is walked and done[1] is turns:
            return done[2]
    same = _leading_same(walked, turns)
    # kept alive here, so no other tuple takes their ids while they are remembered
    _COMPARED.insert(0, (walked, turns, same))
    del _COMPARED[4:]
    return same


def _leading_same(walked: Sequence[Turn], turns: Sequence[Turn]) -> int:
    """How many leading items of the two are the same objects: one pass without a list
    when all are (the usual case: the next prompt's turns start with the last ones)."""
    if all(map(is_, turns, walked)):
        return min(len(turns), len(walked))
    flags = list(map(is_, turns, walked))
    return flags.index(False)


class TurnWalk(Generic[_T]):
    """The per-turn pieces of the last prompt a strategy rendered, reused by the next.

    compare renders prompt 1, 2, 3... of a run: the turns of prompt n+1 are those of
    prompt n (the same objects) and one more, so only the new turn's piece is made,
    and an earlier prompt (its turns a prefix of the last walk's) takes a slice.
    Turns that are not the same objects are walked again from the first that differs
    (a live loop's last turn, read again as its messages come); another run or another
    key walks again from the first turn. ``make(pos, before)`` gets the 1-based position
    and the pieces of the turns before it; the piece must depend only on
    ``turns[:pos]``, ``key`` and the run (``ctx.run_cache``), never on the call order.
    """

    __slots__ = ("_last",)

    def __init__(self) -> None:
        # (run cache, key, the turns seen (a tuple), how many were walked, their pieces)
        self._last: tuple[Any, Hashable, tuple[Turn, ...], int, tuple[_T, ...]] | None = None

    def pieces(self, ctx: RenderContext, turns: Sequence[Turn], key: Hashable,
               make: Callable[[int, list[_T]], _T], count: int | None = None
               ) -> tuple[_T, ...]:
        """``(piece of turn 1, ..., piece of turn count)`` (``count``: all of ``turns``)."""
        count = len(turns) if count is None else count
        last = self._last
        pieces: list[_T] = []
        if last is not None and last[0] is ctx.run_cache and last[1] == key:
            same = min(same_turns(last[2], turns), count, last[3])
            if same == count:
                return last[4][:count]
            pieces.extend(last[4][:same])
        for pos in range(len(pieces) + 1, count + 1):
            pieces.append(make(pos, pieces))
        made = tuple(pieces)
        # the turns tuple itself (copied when it is not one): the same prompt asked again
        # (a live loop's Compressor between two messages) is then recognised at once, and
        # the next prompt's walks compare the same two tuples (:func:`same_turns`)
        walked = turns if type(turns) is tuple else tuple(turns)
        self._last = (ctx.run_cache, key, walked, count, made)
        return made


class TurnFold(Generic[_T]):
    """A value folded over the turns (each turn's made from the turn before it), of the
    last prompt a strategy rendered, carried on by the next.

    What :class:`TurnWalk` does for a piece that only the last turn's value is read of
    (a window of the last N entries, a running flag), keeping only the values of the
    last :attr:`KEEP` turns walked instead of one per turn of the run: a long run's
    earlier values are not kept alive. A prompt whose turns part from the walked ones
    before those (an earlier prompt, another run) walks again from the first turn, to
    the same value. ``make(pos, before)`` gets the 1-based position and the values of
    (at least) the turn before it, last in ``before``; it must depend only on
    ``turns[:pos]``, ``key`` and the run, and read no more than ``before[-1]``.
    """

    KEEP = 4
    """Values of the last turns walked that are kept (a prompt may ask for all of its
    turns but the last few, as well as for all)."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        # (run cache, key, the turns seen (a tuple), how many were walked, the values of
        # the last ones walked)
        self._last: tuple[Any, Hashable, tuple[Turn, ...], int, tuple[_T, ...]] | None = None

    def value(self, ctx: RenderContext, turns: Sequence[Turn], key: Hashable,
              make: Callable[[int, list[_T]], _T], count: int | None = None) -> _T:
        """The value of turn ``count`` (``count``: all of ``turns``; at least 1)."""
        count = len(turns) if count is None else count
        if count < 1:
            raise ValueError("TurnFold.value needs at least one turn")
        last = self._last
        values: list[_T] = []
        start = 0  # the turns whose values are in ``values`` end at turn ``start``
        if last is not None and last[0] is ctx.run_cache and last[1] == key:
            same = min(same_turns(last[2], turns), count, last[3])
            first = last[3] - len(last[4])  # the kept values are of turns first+1...
            if same > first:
                if same == count:  # kept: asked for one of the last turns walked
                    return last[4][count - first - 1]
                values.extend(last[4][:same - first])
                start = same
        for pos in range(start + 1, count + 1):
            values.append(make(pos, values))
            if len(values) > self.KEEP:
                del values[0]
        walked = turns if type(turns) is tuple else tuple(turns)
        self._last = (ctx.run_cache, key, walked, count, tuple(values))
        return values[-1]


def flatten(pieces: Sequence[Sequence[Message]]) -> list[Message]:
    """The messages of ``pieces`` (one sequence of messages per turn), in order."""
    return list(chain.from_iterable(pieces))


class FullHistory(Strategy):
    """Nothing is compressed: what an agent without turnpress would send."""

    name = "full-history"

    def __init__(self) -> None:
        self._pairs: TurnWalk[tuple[Message, ...]] = TurnWalk()
        # (run cache, preamble, mission, system prompt, turns left, the head's messages)
        self._head: tuple[Any, ...] | None = None

    def first_user(self, ctx: RenderContext, turns_left: int) -> str:
        """Mission, the stable namespaces (no ``user/``: nothing is defined yet) and
        the turns left before the first turn."""
        return ctx.template(
            "full_history/first_user.j2",
            mission=ctx.mission.rstrip("\n"),
            namespaces=ctx.namespaces({}),
            turns_left=ctx.turns_left_line(turns_left),
        )

    def turn_pair(self, ctx: RenderContext, turns: Sequence[Turn], pos: int) -> list[Message]:
        """The ASSISTANT/USER pair of the ``pos``-th turn (1-based); an imported turn's
        original messages, as sent."""
        return list(self._pair(ctx, turns, pos))

    def _pair(self, ctx: RenderContext, turns: Sequence[Turn], pos: int
              ) -> tuple[Message, ...]:
        turn = turns[pos - 1]
        # made once per turn (and turns-left line) for the run: later prompts reuse the
        # same message objects
        if turn.messages:
            return ctx.per_turn(turn, PAIR_KEY, lambda: tuple(
                dict(m) for m in turn.messages))  # type: ignore[misc]
        left = ctx.turns_left_after(turns, pos)
        return ctx.per_turn(turn, (*PAIR_KEY, left), lambda: (
            ctx.message("assistant", turn.raw_response),
            ctx.message("user", ctx.feedback(turn, left))))

    def pairs(self, ctx: RenderContext, turns: Sequence[Turn]) -> tuple[tuple[Message, ...], ...]:
        """Every turn's :meth:`turn_pair` (as tuples), the earlier turns' taken from the
        previous prompt's walk (:class:`TurnWalk`)."""
        return self._pairs.pieces(ctx, turns, (*PAIR_KEY, ctx.turns_left + len(turns)),
                                  lambda pos, _: self._pair(ctx, turns, pos))

    def head(self, turns: Sequence[Turn], ctx: RenderContext) -> list[Message]:
        """The messages before the first turn: ``[SYSTEM, USER(first_user)]``, or an
        imported transcript's preamble as sent."""
        left = ctx.turns_left_after(turns, 0)
        kept = self._head
        if not (kept is not None and kept[0] is ctx.run_cache and kept[1] is ctx.preamble
                and kept[2] == ctx.mission and kept[3] == ctx.system_prompt
                and kept[4] == left):
            # made once per run (and turns-left line): later prompts reuse the messages
            if ctx.is_transcript:
                head: tuple[Message, ...] = tuple(
                    dict(m) for m in ctx.preamble)  # type: ignore[misc]
            else:
                head = (ctx.message("system", ctx.system_prompt),
                        ctx.message("user", self.first_user(ctx, left)))
            kept = self._head = (ctx.run_cache, ctx.preamble, ctx.mission, ctx.system_prompt,
                                 left, head)
        return list(kept[5])

    def to_messages(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                    ctx: RenderContext) -> list[Message]:
        """The whole conversation as it happened."""
        messages = self.head(turns, ctx)
        messages.extend(chain.from_iterable(self.pairs(ctx, turns)))
        return messages

    def cache_breakpoints(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                          ctx: RenderContext) -> list[tuple[int, int | None]]:
        """Append-only: the system prompt (a transcript's leading system and developer
        messages), and the whole conversation so far (each later prompt starts with
        this one)."""
        if ctx.is_transcript:
            last = len(ctx.preamble) + sum(len(t.messages) or 2 for t in turns) - 1
            head = next((k for k, m in enumerate(ctx.preamble)
                         if m.get("role") not in INSTRUCTION_ROLES), len(ctx.preamble))
            return [(max(head - 1, 0), None), (last, None)]
        last = 1 + 2 * len(turns)
        return [(0, None), (last, None)]


@hookimpl
def register_strategies(register: Callable[[type], None]) -> None:
    """Register ``full-history``."""
    register(FullHistory)
