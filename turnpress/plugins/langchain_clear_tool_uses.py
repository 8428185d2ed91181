"""Built-in plugin: ``clear-tool-uses-lc``, LangChain's ``ClearToolUsesEdit``, offline.

LangChain v1's ``ContextEditingMiddleware(edits=[ClearToolUsesEdit(...)])`` edits the
request before each model call, leaving the agent's state whole: once the request
passes ``trigger`` tokens, every tool result but the ``keep`` most recent becomes
the placeholder ``[cleared]``. It follows Anthropic's ``clear_tool_uses_20250919``
(``clear-tool-uses``), with two differences this strategy keeps, so that ``compare``
shows what switching the middleware on would send:

- ``clear_at_least`` is where clearing *stops*: results are cleared oldest first
  until at least that many tokens are reclaimed (Anthropic: an activation that
  would clear fewer tokens is not applied at all). ``0``: clear every candidate;
- every cleared result becomes the placeholder, even one shorter than it
  (Anthropic's never makes a result larger).

The options are the middleware's integer forms (``trigger`` and ``keep`` as counts;
its ``("tokens", n)`` / ``("fraction", f)`` forms are not mirrored). Tokens are
counted with the ``tokenizer`` option (default ``chars4``, characters / 4, close to
LangChain's ``count_tokens_approximately``). A PTC-Lisp run's turn counts as one
tool use, as in ``clear-tool-uses``.
"""

from __future__ import annotations

from collections.abc import Callable

from turnpress.core.compression import RenderContext
from turnpress.core.hookspecs import hookimpl
from turnpress.core.model import Message, Turn
from turnpress.plugins.clear_tool_uses import ClearToolUses, ToolUse


class LangChainClearToolUses(ClearToolUses):
    """``full-history`` as LangChain's ``ClearToolUsesEdit`` middleware would send it.

    Options (LangChain's names and defaults): ``trigger`` (100000, >= 0) tokens
    before clearing starts; ``keep`` (3, >= 0) most recent tool results never
    cleared; ``clear_at_least`` (0, >= 0) tokens after which clearing stops (0: no
    limit); ``exclude_tools`` (none) tool names never cleared;
    ``clear_tool_inputs`` (false) also clears the cleared calls' arguments;
    ``tokenizer`` (``chars4``) the registered tokenizer that counts tokens.
    """

    name = "clear-tool-uses-lc"
    keep_short_results = False

    def _cleared(self, turns: list[Turn] | tuple[Turn, ...], ctx: RenderContext,  # type: ignore[override]
                 full: list[Message], uses: list[ToolUse] | None) -> list[ToolUse]:
        if self._full_count(turns, ctx, full) <= self.trigger:
            return []
        uses = uses if uses is not None else self.tool_uses(turns, ctx)
        candidates = uses[: max(0, len(uses) - self.keep)]
        picked = self.clearable(candidates)
        if not self.clear_at_least:
            return picked
        before = self.count(ctx, full)
        for k in range(1, len(picked) + 1):  # oldest first, until enough is reclaimed
            if before - self.count(ctx, self.edit(full, picked[:k], ctx)) >= self.clear_at_least:
                return picked[:k]
        return picked


@hookimpl
def register_strategies(register: Callable[[type], None]) -> None:
    """Register ``clear-tool-uses-lc``."""
    register(LangChainClearToolUses)
