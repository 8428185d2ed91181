"""Built-in plugin: ``clear-tool-uses``, Anthropic's server-side context editing, offline.

Anthropic's ``clear_tool_uses_20250919`` context edit (and LangChain's
``ClearToolUsesEdit`` middleware) lets the client keep sending the whole
conversation; when the request's input passes ``trigger`` tokens, the server
clears the oldest tool results, keeping the ``keep`` most recent tool uses, and
replaces each cleared result by a placeholder. This strategy renders exactly that
edited prompt from a trace, so ``turnpress compare`` shows what turning the
feature on would cost on your own logs before you do it.

Mirrored semantics (Anthropic's context-editing docs):
- the edit looks at the request as the client sends it: the full history. While
  its size is at most ``trigger`` tokens nothing changes (this is ``full-history``);
- once past ``trigger``, every tool use but the ``keep`` most recent is cleared,
  oldest first, except uses of ``exclude_tools``; the result's content becomes the
  placeholder (``[cleared]``), the tool call itself stays so the conversation is
  valid. With ``clear_tool_inputs`` the call's input is cleared too;
- ``clear_at_least``: an activation that would clear fewer tokens than this is
  not applied (clearing breaks the provider cache, so it must be worth it);
- as the history only grows, what was cleared stays cleared.

Tokens are estimated with the registered tokenizer named by ``tokenizer``
(default ``chars4``: characters / 4; ``o200k_base`` counts exactly but costs more).

A tool use is, on an imported transcript, one assistant ``tool_call`` and the
``tool`` message answering it (a turn without tool calls counts its feedback as one
use with no tool name); on a PTC-Lisp run, one turn: its program is the input,
its feedback the result, and its tool names are the tools the program called.
Never larger: a result shorter than the placeholder is kept.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, compress, count
from operator import attrgetter, is_not, itemgetter
from typing import Any

from turnpress.core.compression import Breakpoint, RenderContext, Strategy
from turnpress.core.hookspecs import hookimpl
from turnpress.core.model import Message, Turn
from turnpress.core.registry import get_registry
from turnpress.plugins._imported_messages import content_text
from turnpress.plugins.full_history import FullHistory, TurnWalk
from turnpress.plugins.tokenizers import chars4

CLEARED_ARGUMENTS = "{}"


@dataclass(frozen=True)
class ToolUse:
    """One tool use of the history: where its input and its result are."""

    turn: int  # 1-based position of the turn
    result: int  # index of the result message in the full-history prompt
    call: int  # index of the message carrying the input
    call_id: str | None  # the tool_call id on a transcript, None on a PTC-Lisp run
    tools: tuple[str, ...]  # the tool names it used


def _exclusions(value: Any) -> tuple[str, ...] | str:
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple, set, frozenset)) and all(isinstance(v, str)
                                                                 for v in value):
        return tuple(value)
    raise ValueError(f"strategy 'clear-tool-uses': option 'exclude_tools' must be tool "
                     f"names (a list, or one string separated by spaces or '|'), got {value!r}")


class ClearToolUses(Strategy):
    """``full-history`` as Anthropic's ``clear_tool_uses_20250919`` edit would send it.

    Options (Anthropic's names and defaults): ``trigger`` (100000, >= 0) input
    tokens before clearing starts; ``keep`` (3, >= 0) most recent tool uses never
    cleared; ``clear_at_least`` (0, >= 0) tokens an activation must clear to apply;
    ``exclude_tools`` (none) tool names whose uses are never cleared (a list, or on
    the command line one string separated by spaces or ``|``);
    ``clear_tool_inputs`` (false) also clears the inputs of cleared uses;
    ``tokenizer`` (``chars4``) the registered tokenizer that counts tokens.
    """

    name = "clear-tool-uses"
    #: Anthropic's edit never makes a result larger: one shorter than the placeholder stays
    keep_short_results = True

    def __init__(self, *, trigger: int = 100_000, keep: int = 3, clear_at_least: int = 0,
                 exclude_tools: Any = "", clear_tool_inputs: bool = False,
                 tokenizer: str = "chars4") -> None:
        self.trigger = self.check_int("trigger", trigger)
        self.keep = self.check_int("keep", keep)
        self.clear_at_least = self.check_int("clear_at_least", clear_at_least)
        self.exclude_tools = _exclusions(exclude_tools)
        self.clear_tool_inputs = self.check_choice("clear_tool_inputs", clear_tool_inputs,
                                                   (False, True))
        self.tokenizer = tokenizer
        tokenizers = get_registry().tokenizers()
        if tokenizer not in tokenizers:
            valid = ", ".join(sorted(tokenizers))
            raise ValueError(f"strategy 'clear-tool-uses': option 'tokenizer' must name a "
                             f"registered tokenizer ({valid}), got {tokenizer!r}")
        self._full = FullHistory()
        self._counted: TurnWalk[str] = TurnWalk()
        # per turn: (the index after its messages, its tool uses)
        self._uses: TurnWalk[tuple[int, tuple[ToolUse, ...]]] = TurnWalk()
        # the last prompt edited: (run cache, its cleared uses, its full history, it)
        self._edited: tuple[Any, list[ToolUse], list[Message], list[Message]] | None = None

    @property
    def excluded(self) -> frozenset[str]:
        """The tool names whose uses are never cleared."""
        if isinstance(self.exclude_tools, str):
            return frozenset(self.exclude_tools.replace("|", " ").split())
        return frozenset(self.exclude_tools)

    def count(self, ctx: RenderContext, messages: Sequence[Message]) -> int:
        """The tokens of ``messages`` by the ``tokenizer`` option's tokenizer."""
        count = ctx.registry.tokenizers()[self.tokenizer].value
        return count("".join(_counted(m) for m in messages))

    def _full_count(self, turns: Sequence[Turn], ctx: RenderContext,
                    full: Sequence[Message]) -> int:
        """:meth:`count` of ``full``, the full-history prompt of ``turns``: each turn's
        text is joined once for the run and reused by later prompts; under ``chars4``
        (the default) only their lengths are added up (``len(text) // 4`` of the joined
        text, without joining it: the cheap proof that a run is below ``trigger``)."""
        count = ctx.registry.tokenizers()[self.tokenizer].value
        head = len(ctx.preamble) if ctx.is_transcript else 2  # full history's head
        parts = [_counted(m) for m in full[:head]]

        def counted(pos: int, _: list[str]) -> str:
            turn = turns[pos - 1]
            left = None if turn.messages else ctx.turns_left_after(turns, pos)
            # the same text for every strategy of this family: one key for all of them
            return ctx.per_turn(turn, ("clear-tool-uses", "counted", left), lambda: "".join(
                _counted(m) for m in self._full.turn_pair(ctx, turns, pos)))

        pieces = self._counted.pieces(
            ctx, turns, (self.name, "counted", ctx.turns_left + len(turns)), counted)
        if count is chars4:  # a count of characters: the texts need not be joined
            return (sum(map(len, parts)) + sum(map(len, pieces))) // 4
        parts.extend(pieces)
        return count("".join(parts))

    # -- the edit --------------------------------------------------------------------

    def tool_uses(self, turns: Sequence[Turn], ctx: RenderContext) -> list[ToolUse]:
        """Every tool use of ``turns``, oldest first, located in the full-history prompt."""
        return list(chain.from_iterable(map(_USES, self._located(turns, ctx))))

    def _located(self, turns: Sequence[Turn], ctx: RenderContext
                 ) -> tuple[tuple[int, tuple[ToolUse, ...]], ...]:
        """Per turn: the index after its messages in the full-history prompt, and its
        tool uses."""
        head = len(ctx.preamble) if ctx.is_transcript else 2  # full history's head

        def located(pos: int, before: list[tuple[int, tuple[ToolUse, ...]]]
                    ) -> tuple[int, tuple[ToolUse, ...]]:
            turn = turns[pos - 1]
            start = before[-1][0] if before else head
            return start + (len(turn.messages) or 2), ctx.per_turn(
                turn, ("clear-tool-uses", "uses", pos, start), lambda: tuple(
                    ToolUse(pos, start + result, start + call, call_id, names)
                    for result, call, call_id, names in _uses(turn)))

        # the earlier turns' uses come from the previous prompt (TurnWalk)
        return self._uses.pieces(ctx, turns, (self.name, "uses", head), located)

    def cleared(self, turns: Sequence[Turn], ctx: RenderContext,
                full: list[Message] | None = None) -> list[ToolUse]:
        """The tool uses the edit clears for the prompt after ``turns`` (empty while the
        full history is within ``trigger`` or the activation clears too little);
        ``full`` is that full history when the caller has it already."""
        full = full if full is not None else self._full.to_messages(turns, {}, ctx)
        return self._cleared(turns, ctx, full, None)

    def _cleared(self, turns: Sequence[Turn], ctx: RenderContext, full: list[Message],
                 uses: list[ToolUse] | None) -> list[ToolUse]:
        if self._full_count(turns, ctx, full) <= self.trigger:
            return []
        uses = uses if uses is not None else self.tool_uses(turns, ctx)
        candidates = uses[: max(0, len(uses) - self.keep)]
        picked = self.clearable(candidates)
        if self.clear_at_least and picked:
            edited = self.edit(full, picked, ctx)
            if self.count(ctx, full) - self.count(ctx, edited) < self.clear_at_least:
                return []
        return picked

    def clearable(self, uses: list[ToolUse]) -> list[ToolUse]:
        """``uses`` but those of an excluded tool."""
        excluded = self.excluded
        if not excluded:
            return list(uses)
        return [u for u in uses if not excluded.intersection(u.tools)]

    def edit(self, full: list[Message], uses: Sequence[ToolUse],
             ctx: RenderContext) -> list[Message]:
        """``full`` with the results (and, with ``clear_tool_inputs``, the inputs) of
        ``uses`` replaced by the placeholder."""
        placeholder = ctx.template("clear_tool_uses/placeholder.j2")
        messages = list(full)  # the messages left as they are stay the same objects
        copied: set[int] = set()

        def own(index: int) -> dict[str, Any]:
            if index not in copied:
                messages[index] = dict(messages[index])  # type: ignore[assignment]
                copied.add(index)
            return messages[index]  # type: ignore[return-value]

        for use in uses:
            result = messages[use.result]
            if not self.keep_short_results or len(_text(result)) > len(placeholder):
                own(use.result)["content"] = placeholder
            if not self.clear_tool_inputs:
                continue
            call = messages[use.call]
            if use.call_id is None:
                if len(_text(call)) > len(placeholder):
                    own(use.call)["content"] = placeholder
                continue
            own(use.call)["tool_calls"] = [
                _cleared_call(c) if c.get("id") == use.call_id else c
                for c in call.get("tool_calls") or ()]
        return messages

    def to_messages(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                    ctx: RenderContext) -> list[Message]:
        """The full history, edited as the server would edit it."""
        full = self._full.to_messages(turns, memory, ctx)
        uses = self.cleared(turns, ctx, full)
        return self._edit_turns(turns, full, uses, ctx) if uses else full

    def _edit_turns(self, turns: Sequence[Turn], full: list[Message],
                    uses: Sequence[ToolUse], ctx: RenderContext) -> list[Message]:
        """:meth:`edit` turn by turn (a use's input and result lie in its turn): a turn's
        edited messages are made once per run for the uses cleared in it, and reused.
        The previous prompt's edited messages are taken as they are up to the first
        turn that may differ (before it, the two full histories hold the same objects
        and the same uses are cleared), so a prompt takes Python steps for the turns
        it clears anew, not for every turn."""
        located = self._located(turns, ctx)
        ends = list(map(_END, located))
        # the turns end the full history (what comes before them is its head)
        shift = len(full) - (ends[-1] if ends else 0)
        head = len(ctx.preamble) if ctx.is_transcript else 2
        last = self._edited
        if last is not None and last[0] is ctx.run_cache:
            _, old_uses, old_full, old_messages = last
            same_uses = _identical_prefix(uses, old_uses)
            same = _identical_prefix(full, old_full)
            messages = old_messages[:same]
            messages.extend(full[same:])
            redo = {u.turn for u in uses[same_uses:]}
            redo.update(u.turn for u in old_uses[same_uses:])
            for use in reversed(uses[:same_uses]):  # turns reaching past the shared part
                if shift + ends[use.turn - 1] <= same:
                    break
                redo.add(use.turn)
        else:
            messages = list(full)
            redo = {u.turn for u in uses}
        redo = {pos for pos in redo if pos <= len(turns)}
        if redo:
            first = bisect_left(uses, min(redo), key=_TURN)
            by_turn: dict[int, list[ToolUse]] = {}
            for use in uses[first:]:
                by_turn.setdefault(use.turn, []).append(use)
            for pos in sorted(redo):
                start = shift + (ends[pos - 2] if pos > 1 else head)
                index = shift + ends[pos - 1]
                messages[start:index] = self._edited_turn(turns, pos, full[start:index],
                                                          start, by_turn.get(pos), ctx)
        self._edited = (ctx.run_cache, list(uses), list(full), list(messages))
        return messages

    def _edited_turn(self, turns: Sequence[Turn], pos: int, pair: list[Message],
                     start: int, cleared: list[ToolUse] | None, ctx: RenderContext
                     ) -> Sequence[Message]:
        """The messages ``pair`` of turn ``pos`` (from index ``start`` of the full
        history) with the ``cleared`` uses edited (none: as they are)."""
        if not cleared:
            return pair
        turn = turns[pos - 1]
        local = tuple((u.result - start, u.call - start, u.call_id) for u in cleared)
        left = None if turn.messages else ctx.turns_left_after(turns, pos)
        key = (self.name, "edited", left, self.clear_tool_inputs, local)
        return ctx.per_turn(turn, key, lambda: tuple(self.edit(
            pair, [ToolUse(1, r, c, i, ()) for r, c, i in local], ctx)))

    def cache_breakpoints(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                          ctx: RenderContext) -> list[Breakpoint]:
        """Where a client puts ``cache_control``: the system prompt, the messages before
        the oldest result a later activation may still clear, and the end of the
        conversation. A turn that clears more invalidates the cache after the first
        newly cleared result, as on the API."""
        full = self._full.to_messages(turns, memory, ctx)
        uses = self.tool_uses(turns, ctx)
        cleared = {u.result for u in self._cleared(turns, ctx, full, uses)}
        excluded = self.excluded
        open_uses = [u for u in uses
                     if u.result not in cleared and not excluded.intersection(u.tools)]
        points: list[Breakpoint] = [(0, None), (len(full) - 1, None)]
        if open_uses:
            first = min(u.call if self.clear_tool_inputs else u.result for u in open_uses)
            if first > 0:
                points.append((first - 1, None))
        return sorted(set(points), key=lambda p: p[0])


_END, _USES, _TURN = itemgetter(0), itemgetter(1), attrgetter("turn")


def _identical_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading items of ``a`` and ``b`` are the same objects (in C)."""
    return next(compress(count(), map(is_not, a, b)), min(len(a), len(b)))


def _uses(turn: Turn) -> tuple[tuple[int, int, str | None, tuple[str, ...]], ...]:
    """A turn's tool uses as ``(result, call, call_id, tools)``, message indexes from the
    start of the turn in the full-history prompt."""
    if not turn.messages:
        return ((1, 0, None, tuple(dict.fromkeys(c.name for c in turn.tool_calls))),)
    uses = []
    names_by_id: dict[str, tuple[int, str]] = {}
    for offset, m in enumerate(turn.messages):
        if m.get("role") == "assistant":
            for call in m.get("tool_calls") or ():
                name = (call.get("function") or {}).get("name") or call.get("name", "")
                names_by_id[call.get("id")] = (offset, name)
    for offset, m in enumerate(turn.messages):
        if m.get("role") == "tool" and m.get("tool_call_id") in names_by_id:
            call_at, name = names_by_id[m["tool_call_id"]]
            uses.append((offset, call_at, m["tool_call_id"], (name,)))
        elif m.get("role") == "user" and not names_by_id:
            uses.append((offset, 0, None, ()))
    return tuple(uses)


def _counted(message: Mapping[str, Any]) -> str:
    """A message as :meth:`ClearToolUses.count` counts it."""
    return f"<|{message['role']}|>\n{_text(message)}\n"


def _text(message: Mapping[str, Any]) -> str:
    text = content_text(message)
    for call in message.get("tool_calls") or ():
        text += json.dumps(call, ensure_ascii=False)
    return text


def _cleared_call(call: Mapping[str, Any]) -> dict[str, Any]:
    copy = dict(call)
    if isinstance(copy.get("function"), Mapping):
        copy["function"] = {**copy["function"], "arguments": CLEARED_ARGUMENTS}
    return copy


@hookimpl
def register_strategies(register: Callable[[type], None]) -> None:
    """Register ``clear-tool-uses``."""
    register(ClearToolUses)
