"""Built-in plugin: ``progressive-batch``, the batch compaction of spec 05.

It starts from the ``full-history`` message list. The newest ``min_preserved``
turns always stay in full. Once there are at least ``min_preserved + batch_size``
turns, the oldest turns are compacted in whole blocks of ``batch_size``: a
compacted turn's ASSISTANT message becomes one recap line and its USER feedback
is removed. Because the compacted part grows a block at a time, the prompt is
append-only for ``batch_size`` turns in a row.

Spec 05's flaws are fixed here: the mission (the first USER message) is never
removed; ``min_preserved=0`` keeps no turn in full (rather than all of them); a
response without a ``recap -`` line gets a recap generated from the turn instead
of leaking its whole content; a failed turn is recapped as a failure, whatever
its response claimed. A prompt never ends with an ASSISTANT message: when every
turn is compacted, a USER message with the current turns-left line closes it (when
the turns left are not known, ``compress()`` without ``turns_left``, a line asking to
continue from the recaps).
Never larger (DESIGN §11): a recap longer than the turn it stands for keeps the
turn. On an imported transcript a compacted turn (assistant message with its tool
calls, and the tool results answering them) becomes one assistant recap line, so
every tool call left in the prompt is still answered; the user's own messages that
followed it (a user or system message once the run made a tool call) stay after the
recap, as sent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from typing import Any

from turnpress.core.compression import (
    Breakpoint,
    RenderContext,
    Strategy,
    defined_names,
    error_message,
    printed_lines,
)
from turnpress.core.hookspecs import hookimpl
from turnpress.core.model import Message, Turn
from turnpress.plugins._imported_messages import (
    content_text,
    output_messages,
    output_text,
    user_words,
    words_at,
)
from turnpress.plugins.full_history import FullHistory, TurnWalk, per_turn_after

logger = logging.getLogger(__name__)

RECAP_PREFIX = "recap -"


def recap_line(response: str) -> str | None:
    """The first line of ``response`` that starts with ``recap -`` (leading
    whitespace ignored) and says something after it, stripped; None when there is none."""
    for line in response.splitlines():
        line = line.strip()
        if line.startswith(RECAP_PREFIX) and line[len(RECAP_PREFIX):].strip():
            return line
    return None


def messages_size(messages: Sequence[Message]) -> int:
    """The characters of all message contents (tool calls of transcript messages count
    by their JSON arguments)."""
    return sum(len(content_text(m)) + sum(len(str(c)) for c in m.get("tool_calls") or ())
               for m in messages)


class ProgressiveBatch(Strategy):
    """Full history, with the oldest turns compacted to recap lines in blocks.

    Options: ``min_preserved`` (3, >= 0) newest turns always stay in full;
    ``batch_size`` (4, >= 1) turns are compacted at a time, once at least
    ``min_preserved + batch_size`` turns ran. Logs (INFO, logger
    ``turnpress.plugins.progressive_batch``) the size before and after as a ratio.
    """

    name = "progressive-batch"

    def __init__(self, *, min_preserved: int = 3, batch_size: int = 4) -> None:
        self.min_preserved = self.check_int("min_preserved", min_preserved)
        self.batch_size = self.check_int("batch_size", batch_size, minimum=1)
        self._full = FullHistory()
        self._compacted: TurnWalk[tuple[Message, ...]] = TurnWalk()

    def compacted_count(self, n_turns: int) -> int:
        """How many of the oldest ``n_turns`` turns are compacted: whole blocks of
        ``batch_size``, leaving at least ``min_preserved`` turns in full."""
        if n_turns < self.min_preserved + self.batch_size:
            return 0
        return (n_turns - self.min_preserved) // self.batch_size * self.batch_size

    def recap(self, ctx: RenderContext, turns: Sequence[Turn], pos: int) -> str:
        """The recap line standing for the ``pos``-th turn (1-based).

        A successful turn's own ``recap -`` line when its response has one, else a
        line generated from the turn; a failed turn is always recapped as a failure.
        A transcript turn's recap counts the lines of its feedback as printed.
        """
        turn = turns[pos - 1]
        if turn.success:
            own = recap_line(content_text(turn.messages[0]) if turn.messages
                             else turn.raw_response)
            if own is not None:
                return own
        calls: dict[str, int] = {}
        for call in turn.tool_calls:
            calls[call.name] = calls.get(call.name, 0) + 1
        previous = turns[pos - 2].memory if pos > 1 else {}
        if turn.messages:
            words = words_at(turns, pos)
            printed = (output_text(turn, words).count("\n") + 1
                       if output_messages(turn, words) else 0)
        else:
            printed = printed_lines(turn)
        return ctx.template(
            "progressive_batch/recap.j2",
            number=turn.number,
            failed=not turn.success,
            message=None if turn.success else " ".join(error_message(turn).split()),
            calls=[{"name": name, "count": count} for name, count in calls.items()],
            defined=defined_names(turn.memory, previous),
            printed=printed if turn.success else 0,
        )

    def compacted(self, ctx: RenderContext, turns: Sequence[Turn], pos: int) -> list[Message]:
        """What a compacted turn becomes: its recap line, or (never larger) the turn as
        full history shows it when the recap would be longer. Made once per turn for
        the run (later prompts reuse the same messages)."""
        return list(self._compacted_turn(ctx, turns, pos))

    def _compacted_turn(self, ctx: RenderContext, turns: Sequence[Turn], pos: int
                        ) -> tuple[Message, ...]:
        turn = turns[pos - 1]
        left = None if turn.messages else ctx.turns_left_after(turns, pos)

        def make() -> tuple[Message, ...]:
            full = self._full.turn_pair(ctx, turns, pos)
            recap = self.recap(ctx, turns, pos)
            # the user's own words after the turn stay, as sent
            words = [dict(m) for m in user_words(turn, words_at(turns, pos))]
            if len(recap) + messages_size(words) >= messages_size(full):  # type: ignore[arg-type]
                return tuple(full)
            return (ctx.message("assistant", recap), *words)  # type: ignore[misc]

        return per_turn_after(ctx, turns, pos, (self.name, "compacted", left), make)

    def to_messages(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                    ctx: RenderContext) -> list[Message]:
        """The full-history messages with the oldest turns compacted."""
        return self._render(turns, memory, ctx)[0]

    def _render(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                ctx: RenderContext) -> tuple[list[Message], int]:
        """The messages, and how many of them stay the same until the next block."""
        n = len(turns)
        c = self.compacted_count(n)
        messages = self._full.head(turns, ctx)
        # the earlier turns' pieces come from the previous prompt (TurnWalk)
        messages.extend(chain.from_iterable(self._compacted.pieces(
            ctx, turns, (self.name, "compacted", ctx.turns_left + n),
            lambda pos, _: self._compacted_turn(ctx, turns, pos), count=c)))
        stable = len(messages)
        messages.extend(chain.from_iterable(self._full.pairs(ctx, turns)[c:]))
        if c and c == n and messages[-1]["role"] == "assistant":
            # min_preserved=0 compacted every turn: end with USER, not a recap
            messages.append(ctx.message("user", ctx.template(
                "progressive_batch/close.j2", turns_left=ctx.turns_left_line(ctx.turns_left))))
        if logger.isEnabledFor(logging.INFO):
            before = messages_size(self._full.to_messages(turns, memory, ctx))
            after = messages_size(messages)
            logger.info("progressive-batch: %d turns, %d compacted: %d -> %d chars (%.1f%%)",
                        n, c, before, after, 100.0 * after / before if before else 100.0)
        return messages, stable

    def cache_breakpoints(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                          ctx: RenderContext) -> list[Breakpoint]:
        """The system prompt; the first USER message and the recaps so far (they never
        change); and the end of the prompt: the whole conversation, repeated by the
        next prompt unless it compacts a new block (the marker then still reads what
        the previous prompt cached, as a client's last ``cache_control`` does)."""
        messages, stable = self._render(turns, memory, ctx)
        points: list[Breakpoint] = [(0, None), (stable - 1, None), (len(messages) - 1, None)]
        return sorted(set(points), key=lambda p: p[0])


@hookimpl
def register_strategies(register: Callable[[type], None]) -> None:
    """Register ``progressive-batch``."""
    register(ProgressiveBatch)
