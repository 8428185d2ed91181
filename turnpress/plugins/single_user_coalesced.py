"""Built-in plugin: ``single-user-coalesced``, the default strategy.

``[SYSTEM, USER]``: everything the agent learned is coalesced into one USER
message (mission, namespaces, tool calls, output, the last failed attempt,
turns left); its old code is dropped (spec 01, MSG-001/MSG-002).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from turnpress.core.compression import RenderContext, Strategy, has_printed
from turnpress.core.hookspecs import hookimpl
from turnpress.core.model import Message, Turn
from turnpress.plugins._imported_messages import (
    HEAD_LINES,
    newest_words,
    preamble_head,
    summary_view,
    transcript_head_breakpoints,
    view_message,
)

ERROR_MODES = ("last", "pairs")


class SingleUserCoalesced(Strategy):
    """All context in one USER message; code of successful turns is never repeated.

    Options: ``println_limit`` (15) and ``tool_call_limit`` (20) keep the most
    recent println calls and tool calls; ``errors="last"`` shows only the latest
    failed attempt while the last turn failed (spec 03), ``errors="pairs"`` keeps
    each failed turn of the trailing streak of failures as an ASSISTANT/USER pair
    after the USER message (ERR-002); after a recovery the prompt ends with the USER
    message and the current turns left. The stable head (system prompt, mission,
    ``tool/``, ``data/``) comes first and carries the cache breakpoints.
    """

    name = "single-user-coalesced"
    minimal: ClassVar[bool] = False  # namespaces with names and types only (aggressive)
    #: lines kept at each end of a long transcript output (not an option; strategies
    #: built on this one may set it on their instance)
    output_lines: int = HEAD_LINES

    def __init__(self, *, println_limit: int = 15, tool_call_limit: int = 20,
                 errors: str = "last") -> None:
        self.println_limit = self.check_int("println_limit", println_limit)
        self.tool_call_limit = self.check_int("tool_call_limit", tool_call_limit)
        self.errors = self.check_choice("errors", errors, ERROR_MODES)

    def stable_head(self, ctx: RenderContext) -> str:
        """Mission, ``tool/`` and ``data/``: the head of the USER message that stays the
        same on every turn (NS-012), so providers can cache it."""
        return ctx.template("single_user_coalesced/stable.j2",
                            mission=ctx.mission.rstrip("\n"),
                            namespaces=ctx.namespaces({}, minimal=self.minimal, stable=True))

    def output_section(self, turns: Sequence[Turn], ctx: RenderContext) -> str | None:
        """The ``;; Output:`` section (the last ``println_limit`` println calls)."""
        return ctx.output(turns, self.println_limit)

    def failed_attempt_block(self, turn: Turn, ctx: RenderContext) -> str:
        """The ``Your previous attempt`` block shown while the last turn failed."""
        return ctx.failed_attempt(turn)

    def user_content(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                     ctx: RenderContext, *, turns_left: int,
                     failed_attempt: str | None) -> str:
        """The coalesced USER message (also used by strategies built on this one)."""
        return ctx.template("single_user_coalesced/user.j2",
                            **self.user_sections(turns, memory, ctx, turns_left=turns_left,
                                                 failed_attempt=failed_attempt))

    def user_sections(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                      ctx: RenderContext, *, turns_left: int,
                      failed_attempt: str | None) -> dict[str, Any]:
        """The variables of the USER message's template: the stable head, the
        namespaces, the tool calls made, the output, the failed attempt and the turns
        left (a strategy built on this one adds its own to them)."""
        return {
            "stable": self.stable_head(ctx),
            "namespaces": ctx.namespaces(memory, show_samples=not has_printed(turns),
                                         minimal=self.minimal, stable=False),
            "tool_calls": ctx.tool_calls(turns, self.tool_call_limit),
            "output": self.output_section(turns, ctx),
            "failed_attempt": failed_attempt,
            "turns_left": ctx.turns_left_line(turns_left),
        }

    def to_messages(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                    ctx: RenderContext) -> list[Message]:
        """``[SYSTEM, USER]``; with ``errors="pairs"``, one ASSISTANT/USER pair per failed
        turn of the trailing streak of failures (while the last turn failed).

        An imported transcript gets its system message(s) and one USER message with
        the mission, the tool calls made, the last outputs (cut to head plus tail) and
        what the user said during the run (none when all of that is empty); then the
        user's messages after the last assistant message, as sent (the request to
        answer now).
        """
        if ctx.is_transcript:
            content = self.transcript_content(turns, ctx)
            # no USER message of nothing: a run that starts with the assistant (a greeting
            # bot's) has no mission, and before its first turn nothing to show
            view = [view_message(ctx, content)] if content else []
            return [*preamble_head(ctx), *view, *newest_words(turns)]
        pairs: list[Message] = []
        if self.errors == "pairs":
            failed_attempt = None
            streak = trailing_failures(turns)
            # the USER message speaks as of just before the streak of failed turns
            turns_left = ctx.turns_left_after(turns, len(turns) - len(streak))
            for pos in streak:
                pairs.append(ctx.message("assistant", turns[pos - 1].raw_response))
                pairs.append(ctx.message(
                    "user", ctx.feedback(turns[pos - 1], ctx.turns_left_after(turns, pos))))
        else:
            turns_left = ctx.turns_left
            last_failed = bool(turns) and not turns[-1].success
            failed_attempt = self.failed_attempt_block(turns[-1], ctx) if last_failed else None
        user = self.user_content(turns, memory, ctx, turns_left=turns_left,
                                 failed_attempt=failed_attempt)
        return [ctx.message("system", ctx.system_prompt), ctx.message("user", user), *pairs]

    def transcript_content(self, turns: Sequence[Turn], ctx: RenderContext) -> str:
        """The one USER message for an imported transcript: mission, tool calls made,
        the last ``println_limit`` outputs."""
        return summary_view(turns, ctx, tool_call_limit=self.tool_call_limit,
                            output_limit=self.println_limit, lines=self.output_lines)

    def cache_breakpoints(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                          ctx: RenderContext) -> list[tuple[int, int | None]]:
        """The system prompt, and the mission + ``tool/`` + ``data/`` head of the USER
        message (for a transcript: its system message(s) and the mission that starts
        the USER message)."""
        if ctx.is_transcript:
            return transcript_head_breakpoints(ctx)
        return [(0, None), (1, len(self.stable_head(ctx)))]


def trailing_failures(turns: Sequence[Turn]) -> list[int]:
    """The positions (1-based) of the trailing streak of failed turns, oldest first
    (empty when the last turn succeeded)."""
    streak: list[int] = []
    for pos in range(len(turns), 0, -1):
        if turns[pos - 1].success:
            break
        streak.append(pos)
    return streak[::-1]


@hookimpl
def register_strategies(register: Callable[[type], None]) -> None:
    """Register ``single-user-coalesced``."""
    register(SingleUserCoalesced)
