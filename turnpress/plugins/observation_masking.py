"""Built-in plugin: ``observation-masking``, full history with old observations masked.

Every turn keeps its ASSISTANT message (the raw response) as in ``full-history``;
the USER feedback of turns older than the last ``window`` is replaced by one line,
``[output of turn N omitted: K lines]``. The feedback of the most recent failed
turn is never masked, so the latest error stays in view. This is the strong,
simple baseline of SWE-agent and of the "Complexity Trap" study (Lindenbauer et
al., 2025): the agent's reasoning and actions stay, bulky old observations go.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import accumulate, chain
from typing import Any

from turnpress.core.compression import (
    Breakpoint,
    RenderContext,
    Strategy,
    error_message,
    printed_lines,
)
from turnpress.core.hookspecs import hookimpl
from turnpress.core.model import Message, Turn
from turnpress.plugins._imported_messages import (
    assistant_messages,
    content_text,
    is_words,
    with_content,
    words_at,
)
from turnpress.plugins.full_history import FullHistory, TurnWalk


def output_lines(turn: Turn) -> int:
    """How many lines a turn's feedback showed above its turns-left line: its
    printed lines, its one ``Result:`` line, or the lines of its error."""
    if not turn.success:
        return error_message(turn).count("\n") + 1
    if turn.prints:
        return printed_lines(turn)
    return 1


class ObservationMasking(Strategy):
    """``full-history`` whose old USER feedback is masked by a one-line placeholder.

    Options: ``window`` (3, >= 0): the feedback of the last ``window`` turns stays in
    full; ``step`` (10, >= 1): the masking boundary moves ``step`` turns at a time, so
    the prompt is append-only for ``step`` turns in a row and providers keep their cache
    (DESIGN §11; ``step=1`` masks a little more every turn and costs more than
    ``full-history`` under prompt caching). The latest failed turn as of the last boundary move
    is never masked. A placeholder longer than the feedback it would replace keeps the
    feedback. On an imported transcript the tool and user messages of masked turns get
    the placeholder as content; their ``tool_call_id`` stays, so every tool call is
    still answered. The user's own messages in a tool-calling transcript (a user or
    system message among the feedback once the run made a tool call) are never masked.
    """

    name = "observation-masking"

    def __init__(self, *, window: int = 3, step: int = 10) -> None:
        self.window = self.check_int("window", window)
        self.step = self.check_int("step", step, minimum=1)
        self._full = FullHistory()
        self._masked: TurnWalk[tuple[Message, ...]] = TurnWalk()
        # per turn: the position of the latest failed turn up to it (None: none failed)
        self._failed: TurnWalk[int | None] = TurnWalk()

    def boundary(self, n_turns: int) -> int:
        """How many of the oldest turns lie outside the window: the largest multiple of
        ``step`` that leaves at least ``window`` turns unmasked."""
        if n_turns <= self.window:
            return 0
        return (n_turns - self.window) // self.step * self.step

    def masked(self, turns: Sequence[Turn]) -> set[int]:
        """The positions (1-based) of the turns whose feedback is masked (or would be,
        when the placeholder is not shorter than the feedback)."""
        m = self.boundary(len(turns))
        # judged on the turns up to the last boundary move, so it holds between moves
        seen = turns[: m + self.window]
        latest_failed = max((pos for pos, t in enumerate(seen, 1) if not t.success),
                            default=None)
        return {pos for pos in range(1, m + 1) if pos != latest_failed}

    def placeholder(self, ctx: RenderContext, turn: Turn, lines: int | None = None) -> str:
        """The line standing for a masked turn's feedback (or, on a transcript, for one
        feedback message of ``lines`` lines)."""
        return ctx.template("observation_masking/masked.j2", number=turn.number,
                            lines=output_lines(turn) if lines is None else lines)

    def masked_pair(self, ctx: RenderContext, turns: Sequence[Turn], pos: int) -> list[Message]:
        """The ``pos``-th turn with its feedback masked (never larger than unmasked).
        Made once per turn for the run (later prompts reuse the same messages)."""
        return list(self._masked_turn(ctx, turns, pos))

    def _masked_turn(self, ctx: RenderContext, turns: Sequence[Turn], pos: int
                     ) -> tuple[Message, ...]:
        turn = turns[pos - 1]
        left = None if turn.messages else ctx.turns_left_after(turns, pos)
        words = bool(turn.messages) and words_at(turns, pos)
        return ctx.per_turn(turn, (self.name, "masked", left, words),
                            lambda: tuple(self._masked_pair(ctx, turns, pos)))

    def _masked_pair(self, ctx: RenderContext, turns: Sequence[Turn],
                     pos: int) -> list[Message]:
        turn = turns[pos - 1]
        full = self._full.turn_pair(ctx, turns, pos)
        if turn.messages:
            words = words_at(turns, pos)  # the user's words stay unmasked
            out: list[Message] = []
            for m, same in zip(turn.messages, full, strict=True):
                text = content_text(m)
                line = self.placeholder(ctx, turn, text.count("\n") + 1)
                keep = (m.get("role") == "assistant" or len(text) <= len(line)
                        or is_words(m, words))
                out.append(same if keep else with_content(m, line))  # type: ignore[arg-type]
            return out
        text = self.placeholder(ctx, turn)
        if len(text) >= len(full[1]["content"]):
            return full
        return [full[0], ctx.message("user", text)]

    def to_messages(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                    ctx: RenderContext) -> list[Message]:
        """Full history, with masked feedback for the turns outside the window."""
        return self._render(turns, ctx, starts=False)[0]

    def _render(self, turns: Sequence[Turn], ctx: RenderContext, *, starts: bool = True
                ) -> tuple[list[Message], list[int]]:
        """The messages, and for each turn the index of its first message (as
        :meth:`masked` says; the turns' pieces come from the previous prompt, see
        :class:`TurnWalk`); with ``starts=False``, no indexes (``[]``)."""
        n = len(turns)
        m = self.boundary(n)
        pieces = list(self._masked.pieces(
            ctx, turns, (self.name, "masked", ctx.turns_left + n),
            lambda pos, _: self._masked_turn(ctx, turns, pos), count=m))
        full = self._full.pairs(ctx, turns)
        if m:
            # judged on the turns up to the last boundary move (see masked())
            failed = self._failed.pieces(ctx, turns, (self.name, "failed"),
                                         _latest_failed_of(turns),
                                         count=min(n, m + self.window))
            latest = failed[-1]
            if latest is not None and latest <= m:
                pieces[latest - 1] = full[latest - 1]
        pieces.extend(full[m:])
        messages = self._full.head(turns, ctx)
        first = (list(accumulate(map(len, pieces[:-1]), initial=len(messages)))
                 if n and starts else [])
        messages.extend(chain.from_iterable(pieces))
        return messages, first

    def cache_breakpoints(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                          ctx: RenderContext) -> list[Breakpoint]:
        """The end of the system prompt, the longest prefix the next prompt repeats (all of
        this prompt while the boundary holds; when it moves, the messages before the
        first feedback that may change: the oldest newly masked turn, or the error
        kept in full until then), and the end of the prompt, where a client puts its
        last ``cache_control`` to read what the previous prompt cached. On the prompt
        right after a move, the prefix the previous prompt marked for it is marked
        again: it lies ``window + step`` turns before the end, further back than
        Anthropic's lookback from the end mark (about 20 content blocks), so only a
        mark of its own reads it."""
        messages, starts = self._render(turns, ctx)
        points: list[Breakpoint] = [(0, None)]
        for before in (turns[:-1], turns):  # the previous prompt's mark, then this one's
            index = self._moving_prefix(before, starts)
            if index is not None and (index, None) not in points:
                points.append((index, None))
        if (len(messages) - 1, None) not in points:
            points.append((len(messages) - 1, None))
        return points

    def _moving_prefix(self, turns: Sequence[Turn], starts: Sequence[int]) -> int | None:
        """The last message of the prefix that the prompt of ``turns`` marks because the
        next prompt moves the boundary (None when it does not, or masks only the turn
        about to run); ``starts``: the first message of each turn in a prompt that
        holds that prefix (``turns``' own, or a later one repeating it)."""
        n = len(turns)
        m = self.boundary(n)
        if not n or self.boundary(n + 1) == m:
            return None
        masked = self.masked(turns)
        kept = [pos for pos in range(1, m + 1) if pos not in masked]
        first = min([m + 1, *kept])
        if first > n:  # only the turn about to run gets masked
            return None
        turn = turns[first - 1]
        return starts[first - 1] + (len(assistant_messages(turn)) if turn.messages else 1) - 1


def _latest_failed_of(turns: Sequence[Turn]) -> Callable[[int, list[int | None]], int | None]:
    """For :class:`TurnWalk`: the position of the latest failed turn up to ``pos``."""
    def latest(pos: int, before: list[int | None]) -> int | None:
        if not turns[pos - 1].success:
            return pos
        return before[-1] if before else None
    return latest


@hookimpl
def register_strategies(register: Callable[[type], None]) -> None:
    """Register ``observation-masking``."""
    register(ObservationMasking)
