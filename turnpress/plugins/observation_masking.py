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
from turnpress.plugins.full_history import FullHistory


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

    Option: ``window`` (3, >= 0): the feedback of the last ``window`` turns stays
    in full. The most recent failed turn's error is never masked.
    """

    name = "observation-masking"

    def __init__(self, *, window: int = 3) -> None:
        self.window = self.check_int("window", window)
        self._full = FullHistory()

    def masked(self, turns: Sequence[Turn]) -> set[int]:
        """The positions (1-based) of the turns whose feedback is masked."""
        latest_failed = max((pos for pos, t in enumerate(turns, 1) if not t.success),
                            default=None)
        return {pos for pos in range(1, len(turns) - self.window + 1) if pos != latest_failed}

    def to_messages(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                    ctx: RenderContext) -> list[Message]:
        """Full history, with masked feedback for the turns outside the window."""
        masked = self.masked(turns)
        messages = [ctx.message("system", ctx.system_prompt),
                    ctx.message("user", self._full.first_user(ctx, ctx.turns_left_after(turns, 0)))]
        for pos, turn in enumerate(turns, 1):
            if pos in masked:
                messages.append(ctx.message("assistant", turn.raw_response))
                messages.append(ctx.message("user", ctx.template(
                    "observation_masking/masked.j2", number=turn.number,
                    lines=output_lines(turn))))
            else:
                messages.extend(self._full.turn_pair(ctx, turns, pos))
        return messages

    def cache_breakpoints(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                          ctx: RenderContext) -> list[Breakpoint]:
        """The system prompt, and the conversation up to the first feedback the next
        turn may mask: the one sliding out of the window, or the latest error kept
        in full outside it (masked as soon as a newer turn fails)."""
        n = len(turns)
        masked = self.masked(turns)
        candidates = [n + 1 - self.window] if n + 1 - self.window >= 1 else []
        candidates += [pos for pos in range(1, n - self.window + 1) if pos not in masked]
        if not candidates:
            return [(0, None), (1 + 2 * n, None)]
        # messages before the first changing feedback: up to that turn's ASSISTANT
        return [(0, None), (min(2 * min(candidates), 1 + 2 * n), None)]


@hookimpl
def register_strategies(register: Callable[[type], None]) -> None:
    """Register ``observation-masking``."""
    register(ObservationMasking)
