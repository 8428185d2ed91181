"""Built-in plugin: ``aggressive``, the smallest single USER message.

Laid out like ``single-user-coalesced`` (mission, namespaces, tool calls, output,
the last failed attempt, turns left), but minimal: no samples anywhere (``data/``
and ``user/`` give names and types only), no docstrings, fewer tool calls and
println calls, each println entry cut to ``output_chars`` characters, and the
failed program cut to its first 20 lines. On the same input it is never larger
than ``single-user-coalesced`` with its default options.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from turnpress.core.compression import Breakpoint, RenderContext
from turnpress.core.hookspecs import hookimpl
from turnpress.core.model import Message, Turn
from turnpress.plugins.single_user_coalesced import SingleUserCoalesced

FAILED_PROGRAM_LINES = 20
MIN_OUTPUT_CHARS = 4  # one character and "..."


class Aggressive(SingleUserCoalesced):
    """``single-user-coalesced`` cut to the bone, for tight token budgets.

    Options: ``println_limit`` (3) and ``tool_call_limit`` (5) keep the most recent
    println calls and tool calls; ``output_chars`` (200, >= 4) is the most
    characters one println entry may take, ``...`` included. Only the latest
    failed attempt is shown, while the last turn failed, with its program cut to
    its first 20 lines.
    """

    name = "aggressive"

    def __init__(self, *, println_limit: int = 3, tool_call_limit: int = 5,
                 output_chars: int = 200) -> None:
        self.println_limit = self.check_int("println_limit", println_limit)
        self.tool_call_limit = self.check_int("tool_call_limit", tool_call_limit)
        self.output_chars = self.check_int("output_chars", output_chars,
                                           minimum=MIN_OUTPUT_CHARS)

    def stable_head(self, ctx: RenderContext) -> str:
        """Mission, ``tool/`` and ``data/`` (names and types only): the same every turn."""
        return ctx.template("single_user_coalesced/stable.j2",
                            mission=ctx.mission.rstrip("\n"),
                            namespaces=ctx.namespaces({}, minimal=True, stable=True))

    def user_content(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                     ctx: RenderContext, *, turns_left: int,
                     failed_attempt: str | None) -> str:
        """The minimal USER message."""
        return ctx.template(
            "single_user_coalesced/user.j2",
            stable=self.stable_head(ctx),
            namespaces=ctx.namespaces(memory, minimal=True, stable=False),
            tool_calls=ctx.tool_calls(turns, self.tool_call_limit),
            output=ctx.output(turns, self.println_limit, max_chars=self.output_chars),
            failed_attempt=failed_attempt,
            turns_left=ctx.turns_left_line(turns_left),
        )

    def failed_program(self, ctx: RenderContext, turn: Turn) -> str:
        """The failed-attempt block with the program cut to its first 20 lines.

        The cut ends in a comment saying how many lines were left out; when that
        comment would be longer than the lines it replaces, the program is shown
        whole instead (so the block never grows).
        """
        cut = ctx.failed_attempt(turn, max_lines=FAILED_PROGRAM_LINES)
        whole = ctx.failed_attempt(turn)
        return cut if len(cut) <= len(whole) else whole

    def to_messages(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                    ctx: RenderContext) -> list[Message]:
        """``[SYSTEM, USER]``."""
        last_failed = bool(turns) and not turns[-1].success
        failed = self.failed_program(ctx, turns[-1]) if last_failed else None
        user = self.user_content(turns, memory, ctx, turns_left=ctx.turns_left,
                                 failed_attempt=failed)
        return [ctx.message("system", ctx.system_prompt), ctx.message("user", user)]

    def cache_breakpoints(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                          ctx: RenderContext) -> list[Breakpoint]:
        """The system prompt, and the mission + ``tool/`` + ``data/`` head of the USER
        message."""
        return [(0, None), (1, len(self.stable_head(ctx)))]


@hookimpl
def register_strategies(register: Callable[[type], None]) -> None:
    """Register ``aggressive``."""
    register(Aggressive)
