"""Built-in plugin: ``full-history``, the uncompressed baseline (``compression=False``).

Every turn stays as the agent wrote it: ``[SYSTEM, USER(mission + tool/ + data/ +
turns left)]``, then per turn ASSISTANT(raw response) and USER(feedback + turns left).
An imported transcript is replayed exactly as it was sent: its preamble, then each
turn's original messages (DESIGN §10).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar

from turnpress.core.compression import RenderContext, Strategy
from turnpress.core.hookspecs import hookimpl
from turnpress.core.model import Message, Turn

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


class FullHistory(Strategy):
    """Nothing is compressed: what an agent without turnpress would send."""

    name = "full-history"

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
        turn = turns[pos - 1]
        # made once per turn (and turns-left line) for the run: later prompts reuse the
        # same message objects
        if turn.messages:
            return list(ctx.per_turn(turn, PAIR_KEY, lambda: tuple(
                dict(m) for m in turn.messages)))  # type: ignore[misc]
        left = ctx.turns_left_after(turns, pos)
        return list(ctx.per_turn(turn, (*PAIR_KEY, left), lambda: (
            ctx.message("assistant", turn.raw_response),
            ctx.message("user", ctx.feedback(turn, left)))))

    def head(self, turns: Sequence[Turn], ctx: RenderContext) -> list[Message]:
        """The messages before the first turn: ``[SYSTEM, USER(first_user)]``, or an
        imported transcript's preamble as sent."""
        if ctx.is_transcript:
            return [dict(m) for m in ctx.preamble]  # type: ignore[misc]
        return [ctx.message("system", ctx.system_prompt),
                ctx.message("user", self.first_user(ctx, ctx.turns_left_after(turns, 0)))]

    def to_messages(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                    ctx: RenderContext) -> list[Message]:
        """The whole conversation as it happened."""
        messages = self.head(turns, ctx)
        for pos in range(1, len(turns) + 1):
            messages.extend(self.turn_pair(ctx, turns, pos))
        return messages

    def cache_breakpoints(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                          ctx: RenderContext) -> list[tuple[int, int | None]]:
        """Append-only: the system prompt, and the whole conversation so far (each
        later prompt starts with this one)."""
        if ctx.is_transcript:
            last = len(ctx.preamble) + sum(len(t.messages) or 2 for t in turns) - 1
            return [(0, None), (last, None)]
        last = 1 + 2 * len(turns)
        return [(0, None), (last, None)]


@hookimpl
def register_strategies(register: Callable[[type], None]) -> None:
    """Register ``full-history``."""
    register(FullHistory)
