"""Built-in plugin: ``trim-messages``, LangChain's ``trim_messages``, offline.

A token-triggered trim, as LangChain's ``trim_messages(strategy="last", ...)`` does
it in a LangGraph ``pre_model_hook`` or a LangChain middleware, and as many agents
do by hand: the system message is kept (``include_system``) and, of the rest, the
newest messages that fit in what is left of ``max_tokens``; then messages are
dropped from the front of that tail until it starts on a user message
(``start_on="human"``, what LangChain's docs advise, so that no tool result is left
without its call) or on an assistant message (``start_on="ai"``; as in LangChain,
this drops the messages before the first answer even when everything fits). While
the full history fits, ``start_on="human"`` sends it whole (``full-history``). A
message is never cut in half (LangChain's ``allow_partial=False``, its default).

Tokens are counted with the ``tokenizer`` option (default ``chars4``, characters / 4,
close to LangChain's ``count_tokens_approximately``), each message as
``turnpress.core.message_text`` counts it. Once trimming starts, the front of the
prompt moves every turn, so a provider's prompt cache holds only the system message:
``compare`` shows what that costs. On a tool-calling run whose only user message is
the mission, once the mission no longer fits there is no user message left to start
on, and the prompt is the system message alone, as LangChain's gives it (the Anthropic
API refuses that request: ``compress(format="anthropic")`` says so instead).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from typing import Any

from turnpress.core.compression import Breakpoint, RenderContext, Strategy
from turnpress.core.hookspecs import hookimpl
from turnpress.core.message_text import message_body, message_text
from turnpress.core.model import INSTRUCTION_ROLES, Message, Turn
from turnpress.core.registry import get_registry
from turnpress.plugins.full_history import FullHistory, TurnWalk

#: ``start_on`` values and the role a kept tail must start with
START_ROLES = {"human": "user", "ai": "assistant"}


class TrimMessages(Strategy):
    """The newest messages that fit in ``max_tokens``, as LangChain's ``trim_messages``.

    Options: ``max_tokens`` (100000, >= 1) the most tokens a prompt may have;
    ``start_on`` (``"human"``/``"ai"``) the role the kept messages start with;
    ``include_system`` (true) keeps the system message first; ``tokenizer``
    (``chars4``) the registered tokenizer that counts tokens.
    """

    name = "trim-messages"

    def __init__(self, *, max_tokens: int = 100_000, start_on: str = "human",
                 include_system: bool = True, tokenizer: str = "chars4") -> None:
        self.max_tokens = self.check_int("max_tokens", max_tokens, minimum=1)
        self.start_on = self.check_choice("start_on", start_on, tuple(START_ROLES))
        self.include_system = self.check_choice("include_system", include_system,
                                                (False, True))
        tokenizers = get_registry().tokenizers()
        self.tokenizer = self.check_choice("tokenizer", tokenizer, tuple(sorted(tokenizers)))
        self._full = FullHistory()
        self._sizes: TurnWalk[tuple[int, ...]] = TurnWalk()

    def tokens(self, ctx: RenderContext, message: Mapping[str, Any]) -> int:
        """The tokens of one message, by the ``tokenizer`` option's tokenizer."""
        count = ctx.registry.tokenizers()[self.tokenizer].value
        return count(message_text(str(message["role"]), message_body(message)))

    def to_messages(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                    ctx: RenderContext) -> list[Message]:
        """The full history, trimmed to ``max_tokens`` from the front."""
        pairs = self._full.pairs(ctx, turns)
        full = self._full.head(turns, ctx)  # then the pairs: full-history's prompt
        sizes = [self.tokens(ctx, m) for m in full]
        full.extend(chain.from_iterable(pairs))
        sizes.extend(chain.from_iterable(self._sizes.pieces(  # each turn counted once a run
            ctx, turns, (self.name, self.tokenizer, ctx.turns_left + len(turns)),
            lambda pos, _: tuple(self.tokens(ctx, m) for m in pairs[pos - 1]))))
        if sum(sizes) <= self.max_tokens and self.start_on == "human":
            return full  # all of it fits, and it starts on the mission
        head = 1 if self.include_system and full and full[0]["role"] in INSTRUCTION_ROLES \
            else 0
        budget = self.max_tokens - sum(sizes[:head])
        start = len(full)
        while start > head and sizes[start - 1] <= budget:
            start -= 1
            budget -= sizes[start]
        role = START_ROLES[self.start_on]
        while start < len(full) and full[start]["role"] != role:
            start += 1
        return [*full[:head], *full[start:]]

    def cache_breakpoints(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                          ctx: RenderContext) -> list[Breakpoint]:
        """Where a client puts ``cache_control``: the system message and the end of the
        conversation, as ``full-history`` does (while nothing is trimmed the prompt is
        append-only; once it trims, only the system message repeats)."""
        sent = self.to_messages(turns, memory, ctx)
        return sorted({(0, None), (len(sent) - 1, None)})


@hookimpl
def register_strategies(register: Callable[[type], None]) -> None:
    """Register ``trim-messages``."""
    register(TrimMessages)
