"""Built-in plugin: ``per-turn-summary``, one program/summary pair per turn, append-only.

``[SYSTEM, USER(mission + tool/ + data/ + turns left)]``, then per turn an
ASSISTANT message holding only the turn's program in a ``clojure`` fence, and a
USER message summarizing only that turn: its tool calls, the names it defined
with their type labels, its printed output or its error, and that point's
turns-left line. Nothing already sent ever changes, so the prompt for turn n is
an exact prefix of the prompt for turn n+1 and every earlier token can be cached.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from typing import Any

from turnpress.core.compression import (
    Breakpoint,
    RenderContext,
    Strategy,
    defined_names,
    error_message,
    has_printed,
)
from turnpress.core.hookspecs import hookimpl
from turnpress.core.model import Fn, Message, Turn
from turnpress.plugins._imported_messages import cut_feedback, words_at
from turnpress.plugins.full_history import FullHistory, TurnWalk, per_turn_after


class PerTurnSummary(Strategy):
    """Each turn as ASSISTANT(program only) + USER(summary of that turn); append-only.

    Options: ``println_limit`` (15) and ``tool_call_limit`` (20) cap the println
    calls and tool calls shown in one turn's summary (the most recent ones).
    Defined values show a sample only when the turn did not print (samples OR
    println, SAM-001/SAM-002). Never larger than ``full-history``: a program or a
    summary longer than what full history shows for that turn (the raw response,
    the feedback) gives way to the original. On an imported transcript each turn
    keeps its original messages, with long tool results cut to head plus tail
    (the user's own messages of a tool-calling transcript are never cut).
    """

    name = "per-turn-summary"

    def __init__(self, *, println_limit: int = 15, tool_call_limit: int = 20) -> None:
        self.println_limit = self.check_int("println_limit", println_limit)
        self.tool_call_limit = self.check_int("tool_call_limit", tool_call_limit)
        self._full = FullHistory()
        self._pairs: TurnWalk[tuple[Message, ...]] = TurnWalk()

    def program(self, ctx: RenderContext, turn: Turn) -> str:
        """The ASSISTANT message of a turn: its program in a code fence, no prose."""
        return ctx.template("per_turn_summary/assistant.j2", program=turn.program.strip("\n"))

    def defined(self, ctx: RenderContext, turns: Sequence[Turn], pos: int) -> str | None:
        """The ``;; Defined:`` section of the ``pos``-th turn (1-based), or None."""
        turn = turns[pos - 1]
        previous = turns[pos - 2].memory if pos > 1 else {}
        names = defined_names(turn.memory, previous)
        if not names:
            return None
        samples = not has_printed([turn])
        entries = []
        for name in names:
            value = turn.memory[name]
            sample = None if isinstance(value, Fn) or not samples else ctx.sample(value)
            entries.append({"name": name, "label": ctx.type_label(value), "sample": sample})
        return ctx.template("per_turn_summary/defined.j2", entries=entries)

    def summary(self, ctx: RenderContext, turns: Sequence[Turn], pos: int) -> str:
        """The USER message after the ``pos``-th turn: only what that turn did."""
        turn = turns[pos - 1]
        return ctx.template(
            "per_turn_summary/summary.j2",
            tool_calls=ctx.tool_calls([turn], self.tool_call_limit),
            defined=self.defined(ctx, turns, pos),
            output=ctx.output([turn], self.println_limit) if turn.success else None,
            error=None if turn.success else error_message(turn),
            turns_left=ctx.turns_left_line(ctx.turns_left_after(turns, pos)),
        )

    def turn_pair(self, ctx: RenderContext, turns: Sequence[Turn], pos: int) -> list[Message]:
        """The ``pos``-th turn's pair; never larger than full history's: the program
        when shorter than the raw response, the summary when shorter than the
        feedback, else the original. A transcript turn keeps its messages (every tool
        call answered) with each tool result cut to head plus tail (a user message too
        in a transcript without tool calls, where it carries the observation)."""
        return list(self._turn_pair(ctx, turns, pos))

    def _turn_pair(self, ctx: RenderContext, turns: Sequence[Turn], pos: int
                   ) -> tuple[Message, ...]:
        turn = turns[pos - 1]
        if turn.messages:
            words = words_at(turns, pos)  # the user's own words stay whole
            return ctx.per_turn(turn, (self.name, "cut", words),
                                lambda: tuple(cut_feedback(turn, ctx, words=words)))
        key = (self.name, "pair", ctx.turns_left_after(turns, pos), self.println_limit,
               self.tool_call_limit)
        return per_turn_after(ctx, turns, pos, key,
                              lambda: tuple(self._pair(ctx, turns, pos)))

    def _pair(self, ctx: RenderContext, turns: Sequence[Turn], pos: int) -> list[Message]:
        turn = turns[pos - 1]
        full = self._full.turn_pair(ctx, turns, pos)
        program = self.program(ctx, turn)
        summary = self.summary(ctx, turns, pos)
        return [full[0] if len(full[0]["content"]) <= len(program)
                else ctx.message("assistant", program),
                full[1] if len(full[1]["content"]) <= len(summary)
                else ctx.message("user", summary)]

    def to_messages(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                    ctx: RenderContext) -> list[Message]:
        """``[SYSTEM, USER]`` then one ASSISTANT/USER pair per turn."""
        messages = self._full.head(turns, ctx)
        # the earlier turns' pairs come from the previous prompt (TurnWalk)
        key = (self.name, "pairs", ctx.turns_left + len(turns), self.println_limit,
               self.tool_call_limit)
        messages.extend(chain.from_iterable(self._pairs.pieces(
            ctx, turns, key, lambda pos, _: self._turn_pair(ctx, turns, pos))))
        return messages

    def cache_breakpoints(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                          ctx: RenderContext) -> list[Breakpoint]:
        """Append-only, like ``full-history``: the system prompt and the whole
        conversation so far."""
        return self._full.cache_breakpoints(turns, memory, ctx)


@hookimpl
def register_strategies(register: Callable[[type], None]) -> None:
    """Register ``per-turn-summary``."""
    register(PerTurnSummary)
