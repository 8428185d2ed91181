"""Built-in plugin: ``aggressive``, the smallest single USER message.

Laid out like ``single-user-coalesced`` (mission, namespaces, tool calls, output,
the last failed attempt, turns left), but minimal: no samples anywhere (``data/``
and ``user/`` give names and types only), no docstrings, fewer tool calls and
println calls, each println entry cut to ``output_chars`` characters, and the
failed program cut to its first 20 lines. On the same input it is never larger
than ``single-user-coalesced`` with its default options.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from turnpress.core.compression import RenderContext
from turnpress.core.hookspecs import hookimpl
from turnpress.core.model import Turn
from turnpress.plugins._imported_messages import summary_view
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
    minimal = True
    errors = "last"  # not an option: only the latest failed attempt is shown

    def __init__(self, *, println_limit: int = 3, tool_call_limit: int = 5,
                 output_chars: int = 200) -> None:
        self.println_limit = self.check_int("println_limit", println_limit)
        self.tool_call_limit = self.check_int("tool_call_limit", tool_call_limit)
        self.output_chars = self.check_int("output_chars", output_chars,
                                           minimum=MIN_OUTPUT_CHARS)

    def output_section(self, turns: Sequence[Turn], ctx: RenderContext) -> str | None:
        """The last ``println_limit`` println calls, each cut to ``output_chars``."""
        return ctx.output(turns, self.println_limit, max_chars=self.output_chars)

    def transcript_content(self, turns: Sequence[Turn], ctx: RenderContext) -> str:
        """An imported transcript: mission, the last ``tool_call_limit`` tool calls and
        the last ``println_limit`` outputs, each cut to about ``output_chars``."""
        return summary_view(turns, ctx, tool_call_limit=self.tool_call_limit,
                            output_limit=self.println_limit, max_chars=self.output_chars)

    def failed_attempt_block(self, turn: Turn, ctx: RenderContext) -> str:
        """The failed-attempt block with the program cut to its first 20 lines.

        The cut ends in a comment saying how many lines were left out; when that
        comment would be longer than the lines it replaces, the program is shown
        whole instead (so the block never grows).
        """
        cut = ctx.failed_attempt(turn, max_lines=FAILED_PROGRAM_LINES)
        whole = ctx.failed_attempt(turn)
        return cut if len(cut) <= len(whole) else whole


@hookimpl
def register_strategies(register: Callable[[type], None]) -> None:
    """Register ``aggressive``."""
    register(Aggressive)
