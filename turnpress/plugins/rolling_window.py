"""Built-in plugin: ``rolling-window``, recent turns in full, older ones coalesced.

The last ``window`` turns stay as the ASSISTANT(raw response)/USER(feedback) pairs
``full-history`` shows. Every older turn is coalesced, ``single-user-coalesced``
style, into the first USER message: namespaces (memory as of the last coalesced
turn), tool calls, output. The boundary between the two only moves in steps of
``step`` turns, so the coalesced message, and with it the whole prompt prefix,
stays byte-identical for ``step`` turns in a row and providers can cache it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from itertools import chain
from operator import is_
from typing import Any

from turnpress.core.compression import Breakpoint, RenderContext, Strategy
from turnpress.core.hookspecs import hookimpl
from turnpress.core.model import INSTRUCTION_ROLES, Message, Turn
from turnpress.plugins.full_history import FullHistory
from turnpress.plugins.single_user_coalesced import ERROR_MODES, SingleUserCoalesced


class RollingWindow(Strategy):
    """The last ``window`` turns as full pairs, older turns coalesced into the first USER.

    Options: ``window`` (2, >= 0) turns kept in full; ``step`` (10, >= 1): the coalesced
    part grows ``step`` turns at a time, so it stays the same for ``step`` turns in a
    row (``step=1`` rewrites it every turn, which costs more than ``full-history`` under
    prompt caching on long runs); ``println_limit`` (15), ``tool_call_limit`` (20) and
    ``errors`` (``"last"``/``"pairs"``) apply to the coalesced part as in ``single-user-
    coalesced``: it is exactly what that strategy rendered just after the last coalesced
    turn (so with ``errors="last"`` it ends with that turn's failed attempt if it
    failed). With at most ``window`` turns this is ``full-history``; ``window=0,
    step=1`` is ``single-user-coalesced``. On an imported transcript the coalesced part
    is ``single-user-coalesced``'s transcript view (mission, tool calls made, last
    outputs) and the recent turns keep their original messages.
    """

    name = "rolling-window"

    def __init__(self, *, window: int = 2, step: int = 10, println_limit: int = 15,
                 tool_call_limit: int = 20, errors: str = "last") -> None:
        self.window = self.check_int("window", window)
        self.step = self.check_int("step", step, minimum=1)
        self.println_limit = self.check_int("println_limit", println_limit)
        self.tool_call_limit = self.check_int("tool_call_limit", tool_call_limit)
        self.errors = self.check_choice("errors", errors, ERROR_MODES)
        self._full = FullHistory()
        self._coalesced = SingleUserCoalesced(println_limit=println_limit,
                                              tool_call_limit=tool_call_limit, errors=errors)

    def coalesced_count(self, n_turns: int) -> int:
        """How many of ``n_turns`` turns are coalesced: the largest multiple of ``step``
        that leaves at least ``window`` turns in full."""
        if n_turns <= self.window:
            return 0
        return (n_turns - self.window) // self.step * self.step

    def coalesced(self, turns: Sequence[Turn], c: int, ctx: RenderContext) -> list[Message]:
        """``[SYSTEM, USER]`` for the ``c`` oldest turns: what single-user-coalesced
        rendered just after turn ``c`` (a pure function of the coalesced turns), so it
        stays byte-identical while the boundary holds. Made once per boundary for the
        run and reused by the later prompts until it moves. Only the current boundary's
        part is kept (one slot per run and options), not one per boundary passed."""
        older = tuple(turns[:c])
        turns_left = ctx.turns_left_after(turns, c)
        stamp = (ctx.mission, ctx.system_prompt, ctx.preamble)
        slot: list[Any] = ctx.per_turn(older[0], (
            self.name, "coalesced", self.println_limit, self.tool_call_limit, self.errors),
            list)
        # the same turns (so the same boundary and run) and mission, preamble, budget
        if not (slot and len(slot[0]) == c and all(map(is_, slot[0], older))
                and slot[1] == stamp and slot[2] == turns_left):
            # the context as of just after turn c (made only when the part is made)
            older_ctx = replace(ctx, turns_left=turns_left)
            slot[:] = (older, stamp, turns_left, tuple(
                self._coalesced.to_messages(older, older[-1].memory, older_ctx)))
        return list(slot[3])

    def to_messages(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                    ctx: RenderContext) -> list[Message]:
        """``[SYSTEM, USER(coalesced older turns)]`` then the recent turns as pairs."""
        n = len(turns)
        c = self.coalesced_count(n)
        if c == 0:
            return self._full.to_messages(turns, memory, ctx)
        if c == n:  # window=0: nothing in full, exactly single-user-coalesced
            return self._coalesced.to_messages(turns, memory, ctx)
        messages = self.coalesced(turns, c, ctx)
        messages.extend(chain.from_iterable(self._full.pairs(ctx, turns)[c:]))
        return messages

    def cache_breakpoints(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                          ctx: RenderContext) -> list[Breakpoint]:
        """While the boundary holds on the next turn, the whole conversation so far
        (the coalesced USER message included); when it moves, the mission + ``tool/``
        + ``data/`` head of the first USER message, and the end of the prompt, where
        a client puts its last ``cache_control`` to read what the previous prompt
        cached (the next prompt does not repeat it)."""
        n = len(turns)
        c = self.coalesced_count(n)
        messages = self.to_messages(turns, memory, ctx)
        if self.coalesced_count(n + 1) != c:
            # the end marker reads what the previous prompt cached (see cache_breakpoints)
            return sorted({*self._coalesced.cache_breakpoints(turns, memory, ctx),
                           (len(messages) - 1, None)}, key=lambda p: (p[0], p[1] is None))
        # a transcript with no turn yet may be system messages only
        first_user = next((i for i, m in enumerate(messages)
                           if m["role"] not in INSTRUCTION_ROLES), 0)
        points: list[Breakpoint] = [(0, None), (first_user, None), (len(messages) - 1, None)]
        return sorted(set(points), key=lambda p: p[0])


@hookimpl
def register_strategies(register: Callable[[type], None]) -> None:
    """Register ``rolling-window``."""
    register(RollingWindow)
