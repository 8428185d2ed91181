"""Compress any agent's chat messages: the run-time API (DESIGN §2, §10).

``compress(messages)`` takes the message list a tool-calling loop is about to send,
reads it with the transcript mapping (the same as ``turnpress import``: each
assistant message starts a turn, the messages after it are its feedback), and
returns the messages of the next call as the chosen strategy renders them, in the
same provider shape. :class:`Compressor` is the incremental form for a live loop.

Input and output shapes (``format``):

- ``"openai"``: a list of chat-completions messages (dicts; the SDK's message
  objects are accepted too, through their ``model_dump``). Returns a list of
  message dicts. Under ``full-history`` the result equals the input.
- ``"anthropic"``: ``{"system": ..., "messages": [...], "tools"?: [...]}`` (a
  request body) or a ``(system, messages)`` pair; ``system`` may be ``None``.
  Returns ``(system, messages)`` for ``client.messages.create(system=...,
  messages=...)``, with ``cache_control`` markers at the strategy's stable prefix;
  ``system`` is ``""`` when there is none. ``is_error`` flags of tool results are
  kept.
- ``"responses"``: OpenAI Responses API input: a list of items (``message``,
  ``function_call``, ``function_call_output``, ``reasoning``, ``compaction``...) or
  a request body ``{"input": [...], "instructions"?, "tools"?, ...}``. Returns the same
  shape: a list of items, or for a body the body with its ``input`` (and
  ``instructions``) replaced and its other keys (``tools``, ``model``...) as given,
  for ``client.responses.create(**body)``.
  ``reasoning`` and ``compaction`` items are opaque and sent back whole (see
  :mod:`turnpress.core.responses`). :class:`Compressor` takes this format too; it
  reads each item once (the items after the last place a chat message starts
  afresh again when more come).

A ``usage`` key on an assistant message (what logging proxies record) is read as
that call's billed usage and is not sent back; nor is any other key that is no
field of the provider's message (``extra``, ``provider_specific_fields``...), and
an object ``arguments`` is sent as its JSON string. A list the provider's API
would refuse is refused with the index of the culprit: a tool call that no tool
message answers before the next assistant message, tool calls that share an id,
a call answered twice. A list with no assistant message
yet has no turn to compress: it is sent as it is. Errors are ``ValueError``s naming
the message index and the problem, in the words of ``format``: for Anthropic input,
the content block index and its ``tool_use`` / ``tool_result`` / ``tool_use_id``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from itertools import chain
from operator import attrgetter
from typing import Any, Literal

from turnpress.core.compression import (
    Breakpoint,
    Compression,
    RenderOptions,
    StrategyNotApplicable,
    copy_json,
    get_strategy,
    handed_out,
    prepare,
    render_with_breakpoints,
)
from turnpress.core.errors import quote
from turnpress.core.model import INSTRUCTION_ROLES, Message, Tool, Turn
from turnpress.core.pricing import CacheRules, Price, resolve_pricing
from turnpress.core.providers import (
    alternating,
    anthropic_breakpoints,
    to_anthropic,
    to_openai,
)
from turnpress.core.responses import (
    ITEM_TYPES,
    KEPT,
    OPAQUE_TYPES,
    to_responses,
    with_compactions,
)
from turnpress.core.strategy_lookup import spec_value
from turnpress.core.tokens import common_prefix_length, get_tokenizer
from turnpress.core.trace import Trace, TraceError
from turnpress.plugins.readers import anthropic_messages, openai_chat, openai_responses
from turnpress.plugins.readers._messages_to_trace import (
    Entry,
    build_trace,
    text_of,
    tool_error,
    tools_from,
)

__all__ = ["Compressor", "compress", "count_tokens"]

Format = Literal["openai", "anthropic", "responses"]
FORMATS = ("openai", "anthropic", "responses")
WHERE = "messages"

#: the tiny chat transcript a Compressor renders once at creation, so a strategy
#: that cannot render transcripts says so before the first call
_PROBE: tuple[dict[str, Any], ...] = (
    {"role": "system", "content": "You are a helpful agent."},
    {"role": "user", "content": "List the files."},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "ls", "arguments": "{\"path\": \".\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "a.txt\nb.txt"},
    {"role": "assistant", "content": "There are two files."},
    {"role": "user", "content": "Thanks."},
)


def compress(messages: Any, *, strategy: Compression = True, tools: Any = None,
             turns_left: int | None = None, format: Format = "openai",
             cache: str | CacheRules | None = None, price: str | Price | None = None) -> Any:
    """The messages to send next: ``messages`` rendered by ``strategy``.

    ``strategy`` is anything :func:`turnpress.normalize` accepts (default: the
    library's default strategy, ``price-scheduled``; ``"full-history"``
    returns the input's messages as they were, in the OpenAI shape equal to the
    input, in the Anthropic shape with turnpress's own ``cache_control``
    breakpoints). ``tools`` is the request's ``tools`` list (OpenAI or Anthropic
    shape) or a ``{name: Tool | schema}`` mapping and ``turns_left`` the turns the
    loop has left: both are handed to the strategy (``ctx.tools``,
    ``ctx.turns_left``) for plugin strategies that show them; the built-in strategies
    render a transcript the same with or without them (the request's own ``tools``
    describe the tools; a transcript has no turns-left line). Without ``turns_left``,
    ``ctx.turns_left_known`` is False and ``ctx.turns_left_line()`` gives ``""``.
    Shapes per ``format``: see the module docstring. ``cache`` (``openai``,
    ``anthropic`` or ``none``; None: the provider of ``format``) and ``price`` (a
    preset, ``in=..,cached=..[,write=..]`` or a ``Price``; None: ``openai-gpt-4.1``
    or ``anthropic-sonnet-4`` after the cache) tell the strategy what the prompts
    cost (``ctx.cache``, ``ctx.price``, DESIGN §11). Pure: the same input gives the
    same output.

    Once the run has made a tool call, a user, system or developer message among the
    feedback is the user's own words: no built-in strategy shows it as tool output,
    cuts it or drops it, and a coalesced view ends with the newest ones as sent (see
    the README's "Compress your own agent's messages").
    """
    _check_format(format)
    _check_turns_left(turns_left)
    chosen = get_strategy(strategy)  # an unknown strategy is an error even with no turn yet
    cache_rules, prices = _pricing(format, cache, price)
    if format == "responses":
        return _compress_responses(messages, chosen, tools, turns_left, (cache_rules, prices))
    if format == "openai":
        return _compress_openai(messages, chosen, tools, turns_left, (cache_rules, prices))
    # 1. messages -> entries: the format's reader, as `turnpress import` reads them
    system, body, tools = _anthropic_input(messages, tools)
    entries = anthropic_messages.message_entries(system, body, WHERE)
    error_ids = _error_ids(body)
    if not _has_assistant(body):  # no turn yet: the messages go as they are
        return _preamble_only(entries, format, error_ids)
    # 2. entries -> trace: each assistant message starts a turn
    trace = build_trace(entries, where=WHERE, source=anthropic_messages.FORMAT,
                        tools=_tool_map(tools))
    # 3. and 4. trace -> the next turn's prompt -> the provider's shape
    return _next_prompt(trace, chosen, turns_left, (cache_rules, prices), format, error_ids)


def compress_with_errors(messages: Any, failed: Collection[str], *,
                         strategy: Compression = True, tools: Any = None,
                         turns_left: int | None = None, cache: str | CacheRules | None = None,
                         price: str | Price | None = None) -> list[dict[str, Any]]:
    """:func:`compress` of OpenAI chat ``messages`` (``format="openai"``) whose tool
    messages answering the tool calls in ``failed`` (their ids) report errors: each
    makes its turn a failed one (reason ``tool_error``, its text the message), as
    Anthropic's ``is_error`` does. The OpenAI shape has no such flag, while agent
    frameworks keep one beside a tool result (LangChain's ``ToolMessage.status``,
    pydantic-ai's ``RetryPromptPart``); their integrations pass it here. The messages
    are read, rendered and given back in the OpenAI shape, as by :func:`compress`."""
    _check_turns_left(turns_left)
    chosen = get_strategy(strategy)
    return _compress_openai(messages, chosen, tools, turns_left,
                            _pricing("openai", cache, price), set(failed))


def _compress_openai(messages: Any, chosen: Any, tools: Any, turns_left: int | None,
                     pricing: tuple[CacheRules, Price], failed: Collection[str] = ()) -> Any:
    """``compress(format="openai")`` (``failed``: see :func:`compress_with_errors`)."""
    # 1. messages -> entries: the reader, as `turnpress import` reads them
    body = _plain_list(messages)
    entries = openai_chat.message_entries(body, WHERE)
    if failed:
        for entry in entries:
            _flag_error(entry, failed)
    if not _has_assistant(body):  # no turn yet: the messages go as they are
        return _preamble_only(entries, "openai")
    # 2. entries -> trace: each assistant message starts a turn
    trace = build_trace(entries, where=WHERE, source=openai_chat.FORMAT, tools=_tool_map(tools))
    # 3. and 4. trace -> the next turn's prompt -> the provider's shape
    return _next_prompt(trace, chosen, turns_left, pricing, "openai")


def _flag_error(entry: Entry, failed: Collection[str]) -> None:
    """Mark ``entry`` as an error when it is a tool message answering a call in
    ``failed`` (the text the anthropic-messages reader gives an ``is_error`` result)."""
    message = entry.message
    if (isinstance(message, Mapping) and message.get("role") == "tool"
            and message.get("tool_call_id") in failed and entry.error is None):
        entry.error = tool_error(message.get("content"))


def _next_prompt(trace: Trace, chosen: Any, turns_left: int | None,
                 pricing: tuple[CacheRules, Price], format: str,
                 error_ids: Iterable[str] = ()) -> Any:
    """The prompt of the turn after ``trace``'s last, rendered by the strategy, in the
    provider's shape."""
    args = trace.prompt_arguments(len(trace.turns) + 1)
    args["turns_left"] = turns_left  # None: not known (RenderContext.turns_left_known)
    args["memory"] = {}
    prompt, points = render_with_breakpoints(**args, compression=chosen,
                                             cache=pricing[0], price=pricing[1])
    _check_not_empty(prompt, chosen, format)
    return _shaped(prompt, points, format, set(error_ids))


def _check_not_empty(prompt: Sequence[Message], strategy: Any, format: str) -> None:
    """An Anthropic request needs a message after the system prompt: a strategy that
    leaves none (``trim-messages``, as LangChain's ``trim_messages``, once a tool-calling
    run's mission no longer fits) is an error saying so, not a request the API refuses."""
    if format != "anthropic" or any(m["role"] not in INSTRUCTION_ROLES for m in prompt):
        return
    options = ", ".join(f"{k}={spec_value(v)}"
                        for k, v in getattr(strategy, "options", {}).items())
    raise ValueError(f"strategy {strategy.name!r} left no message after the system prompt, "
                     f"and the Anthropic API needs one; give it more room (its options: "
                     f"{options or 'none'}) or choose another strategy")


def _pricing(format: str, cache: str | CacheRules | None, price: str | Price | None
             ) -> tuple[CacheRules, Price]:
    """The cache rules and price for the strategy: ``cache`` (None: ``format``'s
    provider, OpenAI for ``responses``) and ``price`` (None: that cache's default
    preset)."""
    provider = "openai" if format == "responses" else format
    return resolve_pricing(cache if cache is not None else provider, price)


def _compress_responses(data: Any, chosen: Any, tools: Any, turns_left: int | None,
                        pricing: tuple[CacheRules, Price]) -> Any:
    """``compress(format="responses")``: a list of items, or a request body; the same
    four steps as :func:`compress`, and the opaque items put back."""
    if isinstance(data, Mapping):
        if "input" not in data:
            raise TraceError(f"{WHERE}: a Responses input needs \"input\": pass a list of "
                             f"items or {{\"input\": [...], \"instructions\": ...}}")
        items, instructions = data["input"], data.get("instructions")
        tools = tools if tools is not None else data.get("tools")
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
    else:
        items, instructions = data, None
    items = _plain_list(items)
    entries = openai_responses.entries(items, WHERE, instructions=instructions)
    if not _has_assistant([e.message for e in entries]):
        instructions_out, out = _preamble_only(entries, "responses")
    else:
        trace = build_trace(entries, where=WHERE, source=openai_responses.FORMAT,
                            tools=_tool_map(_function_tools(tools)))
        instructions_out, out = _next_prompt(trace, chosen, turns_left, pricing, "responses")
        out = with_compactions([e.message for e in entries], out)
    if not isinstance(data, Mapping):
        return out
    body: dict[str, Any] = {} if instructions_out is None else {"instructions": instructions_out}
    body.update((k, v) for k, v in data.items() if k not in ("instructions", "input"))
    return {**body, "input": out}


def _function_tools(tools: Any) -> Any:
    """A Responses ``tools`` list without the built-in tools (web_search...)."""
    if not isinstance(tools, list):
        return tools
    return [t for t in tools if not (isinstance(t, Mapping)
                                     and t.get("type", "function") != "function")]


class Compressor:
    """The incremental form of :func:`compress` for a live agent loop.

    ``add(message)`` appends each message as it happens (the system prompt, the
    mission, each assistant reply, each tool result...); ``messages()`` is what to
    send now, equal to ``compress()`` of every message added so far. Parsed turns
    are kept, so one call costs what the strategy's own rendering costs, not a
    re-read of the run; so are the provider-shaped messages of the last call, so only
    what the strategy changed is shaped again, and each call hands out fresh copies
    (the caller may change them: no other call sees it). ``system``: the system prompt
    (with ``format="anthropic"`` the request's top-level ``system``, and messages are
    Anthropic messages; otherwise a first ``{"role": "system"}`` message, as if added
    first).
    ``cache`` and ``price`` are :func:`compress`'s (None: the provider of ``format`` and
    its default price).

    The strategy is checked at creation: an unknown one raises ``ValueError``, and
    one that cannot render chat transcripts raises
    :class:`~turnpress.StrategyNotApplicable` (probed on a tiny transcript).
    """

    def __init__(self, strategy: Compression = True, *, format: Format = "openai",
                 tools: Any = None, system: Any = None, cache: str | CacheRules | None = None,
                 price: str | Price | None = None) -> None:
        _check_format(format)
        self.format = format
        self.strategy = get_strategy(strategy)
        self.cache, self.price = _pricing(format, cache, price)
        self.tools = _tool_map(_function_tools(tools))
        self._raw_tools = tools
        self._items: list[Any] = []  # format="responses": the items added
        self._entries: list[Entry] = []  # the preamble, then the open turn
        self._preamble: list[Entry] = []
        self._turns: list[Turn] = []  # closed turns
        self._open: list[Entry] = []  # the last turn: its assistant message + feedback
        self._open_turn: Turn | None = None
        self._system_prompt: str | None = None
        self._mission: str | None = None
        self._error_ids: set[str] = set()
        self._count = 0  # messages added
        self._turns_tuple: tuple[Turn, ...] | None = None  # see turns
        self._shapes = _ShapeCache(format)  # the provider shape of the last prompt's messages
        # format="responses": the last item a chat message starts afresh at (no item after
        # it changes the messages before), the items read for good, the compaction items
        # of those, and whether all items so far are opaque
        self._start = self._settled = 0
        self._compactions: list[Any] = []
        self._opaque_only = True
        # the items after _settled, taken until more come: (how many items then, the state
        # before them, the compaction items of all the items taken)
        self._tail: tuple[int, tuple[Any, ...], list[Any]] | None = None
        _probe(self.strategy)
        if system is None or system == "":
            return
        if not isinstance(system, (str, list)):
            raise ValueError("system must be a string or a list of text blocks, got "
                             f"{type(system).__name__}")
        if format == "anthropic":
            for entry in _anthropic_entries(system, []):
                self._take(entry)
        else:  # the first message, as if added first
            self.add({"role": "system", "content": system})

    def add(self, message: Any, *, failed: bool = False) -> None:
        """Append one message (a dict, or an SDK message object). A message that
        cannot be read raises ``ValueError`` naming its index. ``failed``: the message
        is a tool result that reports an error, which makes its turn a failed one (as
        :func:`compress_with_errors` reads it; ``format="openai"`` only, the Anthropic
        shape says it with ``is_error``)."""
        if failed and self.format != "openai":
            raise ValueError(f"Compressor.add(failed=True) is for format='openai' tool "
                             f"messages; this compressor reads format={self.format!r}"
                             + (" (flag the tool_result with \"is_error\": true)"
                                if self.format == "anthropic" else ""))
        index = self._count
        message = _plain(message)
        if self.format == "responses":
            # checked now, with its index: the items so far plus this one must read (from
            # the last place a chat message starts afresh: nothing before it can change)
            self._opaque_only = self._opaque_only and _is_opaque(message)
            if not self._opaque_only:  # opaque items wait for a message
                openai_responses.entries([*self._items[self._start:], message], WHERE,
                                         start=self._start)
            if _starts_afresh(self._items[-1] if self._items else None, message):
                self._start = len(self._items)
            self._items.append(message)
            self._count += 1
            return
        if self.format == "anthropic":
            entries = _anthropic_entries(None, [message], index)
            self._error_ids |= _error_ids([message])
        else:
            entries = _openai_entries([message], index)
            for entry in entries if failed else ():
                _flag_error(entry, {entry.message.get("tool_call_id")})
        saved = self._saved()
        try:
            for entry in entries:
                self._take(entry)
        except ValueError:
            self._restore(saved)  # a bad message leaves the compressor as it was
            raise
        self._count += 1

    def _restore(self, saved: tuple[Any, ...]) -> None:
        preamble, self._open, self._open_turn, turns, self._system_prompt, self._mission = saved
        self._turns_tuple = None
        del self._preamble[preamble:]
        del self._turns[turns:]

    def extend(self, messages: Iterable[Any]) -> None:
        """``add`` each of ``messages``."""
        for message in messages:
            self.add(message)

    def __len__(self) -> int:
        """The number of messages added."""
        return self._count

    @property
    def turns(self) -> tuple[Turn, ...]:
        """The turns read so far (one per assistant message; with ``format="responses"``
        none: the items are read when the messages are asked for)."""
        return () if self.format == "responses" else self._turns_now()

    def _turns_now(self) -> tuple[Turn, ...]:
        if self._turns_tuple is None:  # the same tuple until a message changes the turns
            self._turns_tuple = ((*self._turns, self._open_turn) if self._open_turn
                                 else tuple(self._turns))
        return self._turns_tuple

    def messages(self, *, turns_left: int | None = None) -> Any:
        """What to send now, in this compressor's ``format`` (see :func:`compress`;
        ``turns_left=None``: not known, no turns-left line)."""
        _check_turns_left(turns_left)
        if self.format == "responses":
            return self._responses(turns_left)
        if not self._open:
            return _preamble_only(self._preamble, self.format, self._error_ids)
        return self._render(turns_left)

    def _render(self, turns_left: int | None) -> Any:
        """The prompt of the turns taken so far, in the provider's shape."""
        preamble = tuple(e.message for e in self._preamble)
        options = RenderOptions(self._mission or "", self._system_prompt or "", self.tools,
                                None, turns_left, self.strategy, (), preamble, self.cache,
                                self.price)
        prepared = prepare(self._turns_now(), {}, options)
        messages = prepared.messages()  # the strategy's own objects: shaped and copied below
        points = prepared.breakpoints(messages)  # checked in every format, as compress() does
        _check_not_empty(messages, self.strategy, self.format)
        return self._shapes.shaped(messages, points, self._error_ids)

    def _responses(self, turns_left: int | None) -> Any:
        """``messages()`` of ``format="responses"``: the items up to the last place a chat
        message starts afresh are read once (their turns taken for good), the items
        after it again when more come (taken until then). Equal to :func:`compress` of
        every item; a problem falls back to it, so its error reads the same."""
        items = self._items
        try:
            if self._tail is None or self._tail[0] != len(items):
                self._drop_tail()
                self._settle()
                saved, compactions = self._saved(), list(self._compactions)
                try:
                    for entry in openai_responses.entries(items[self._settled:], WHERE,
                                                          start=self._settled):
                        self._take(entry)
                        compactions.extend(_compactions(entry.message))
                except Exception:
                    self._restore(saved)
                    raise
                self._tail = (len(items), saved, compactions)
            compactions = self._tail[2]
            if not self._open:  # no assistant message yet: the items go as they are
                return _preamble_only(self._preamble, "responses")[1]
            _, out = self._render(turns_left)
        except Exception:  # compress() of every item raises what is wrong, as it says it
            return compress(list(items), strategy=self.strategy, tools=self._raw_tools,
                            turns_left=turns_left, format="responses", cache=self.cache,
                            price=self.price)
        missing = [dict(i) for i in compactions if i not in out]  # as with_compactions()
        return [*missing, *out] if missing else out

    def _drop_tail(self) -> None:
        """Put back the state before the items after ``_settled`` were taken."""
        if self._tail is not None:
            self._restore(self._tail[1])
            self._tail = None

    def _settle(self) -> None:
        """Take the Responses items up to ``_start`` for good (all or none of them)."""
        settled, start = self._settled, self._start
        if start <= settled:
            return
        saved, kept = self._saved(), len(self._compactions)
        try:
            for entry in openai_responses.entries(self._items[settled:start], WHERE,
                                                  start=settled):
                self._take(entry)
                self._compactions.extend(_compactions(entry.message))
        except Exception:
            self._restore(saved)
            del self._compactions[kept:]
            raise
        self._settled = start

    def _saved(self) -> tuple[Any, ...]:
        """What :meth:`_restore` puts back."""
        return (len(self._preamble), list(self._open), self._open_turn, len(self._turns),
                self._system_prompt, self._mission)

    # -- incremental reading -------------------------------------------------------------

    def _take(self, entry: Entry) -> None:
        self._turns_tuple = None
        role = entry.message.get("role") if isinstance(entry.message, dict) else None
        if role in ("user", *INSTRUCTION_ROLES):
            text = text_of(entry.message.get("content"))
            if role != "user" and self._system_prompt is None:
                self._system_prompt = text
            if role == "user" and self._mission is None:
                self._mission = text
        if role == "assistant":
            if self._open_turn is not None:
                # the open turn, followed: its calls must all be answered now
                build_trace([*self._preamble, *self._open, entry], where=WHERE, source="")
                self._turns.append(self._open_turn)
            elif not self._preamble:
                build_trace([entry], where=WHERE, source="")  # the reader's own error
            self._open = [entry]
        elif self._open:
            self._open.append(entry)
        else:
            _preamble_trace([*self._preamble, entry])  # checks the message
            self._preamble.append(entry)
            return
        # the open turn, read again with the reader's mapping (its size, not the run's)
        trace = build_trace([*self._preamble, *self._open], where=WHERE, source="")
        self._open_turn = replace(trace.turns[0], number=len(self._turns) + 1)


# -- the provider shape of a live loop's prompts ------------------------------------------


class _Shaped:
    """One strategy message in the provider's shape: the message it was made from
    (``source``, kept alive so its id stays its own), a copy of its fields as they were
    then (``was``: a strategy that sets a field of a message it gave before is seen, as
    ``compare``'s prompt tracks see it), the breakpoint offsets it was shaped with
    (``cuts``), the shaped message (``one``: turnpress's own copy, never handed out) and
    ``fresh()``, a new copy of it for the caller (see :func:`_copier`)."""

    __slots__ = ("cuts", "fresh", "one", "source", "was")

    def __init__(self, source: Any, cuts: tuple[Any, ...], shaped: Any) -> None:
        self.source, self.was, self.cuts = source, dict(source), cuts
        self.one = copy_json(shaped)
        copier = _copier(self.one)
        self.fresh: Callable[[], Any] = (self.one.copy if copier is dict.copy
                                         else partial(copier, self.one))
        if type(self.one) is list and all(_copier(i) is dict.copy for i in self.one):
            self.fresh = partial(_copy_flat, self.one)  # Responses items of strings


class _ShapeCache:
    """The provider-shaped messages of a :class:`Compressor`'s last prompt, kept between
    ``messages()`` calls.

    Strategies hand out the same message objects from one prompt to the next (an
    append-only view grows by a delta per turn). The part of the prompt that starts
    like the last one (the same objects, still equal to what they were: a strategy may
    change a message it gave before) takes the last call's shapes in a few C-speed
    passes; any other message is looked up by identity, or shaped anew. What the
    caller gets is always fresh containers (:func:`_copier`: one C-speed copy for a
    message of strings), so changing a result changes neither the next one nor the
    kept shapes. The Anthropic shape depends on the cache breakpoints too: a message
    is shaped with the breakpoint offsets it carries, alone, and consecutive messages
    of one role are merged after (:func:`alternating`), as
    :func:`~turnpress.core.providers.to_anthropic` does. The result equals
    :func:`_shaped` of the same messages, which any error falls back to (so errors
    read the same).
    """

    def __init__(self, format: str) -> None:
        self.format = format
        # the last call's messages (after the system head, in the Anthropic shape), each
        # as it was then, its shape and how to copy that shape
        self._sources: list[Any] = []
        self._was: list[Any] = []
        self._entries: list[_Shaped] = []
        self._fresh: list[Callable[[], Any]] = []
        self._cut_at: set[int] = set()  # the indices of those shaped with breakpoints
        self._errors = 0  # len(error_ids) when the kept Anthropic shapes were made

    def shaped(self, messages: list[Message], points: Sequence[Breakpoint],
               error_ids: set[str]) -> Any:
        """``_shaped(messages, points, format, error_ids)``, from the kept shapes."""
        if self.format == "anthropic":
            return self._anthropic(messages, points, error_ids)
        if self.format == "responses":
            try:
                self._kept(messages, {}, _to_responses_one)
            except _NotAlone:  # a body's instructions: the whole list decides
                self._forget()
                return _shaped(handed_out(messages), points, "responses", error_ids)
            return None, list(chain.from_iterable(f() for f in self._fresh))
        self._kept(messages, {}, _to_openai_one)
        return [f() for f in self._fresh]

    def _kept(self, messages: list[Any], cuts: Mapping[int, tuple[Any, ...]],
              shape: Callable[[Any, tuple[Any, ...]], Any]) -> list[_Shaped]:
        """The shape of each of ``messages`` (``cuts``: the breakpoint offsets by index),
        the kept lists brought up to them."""
        sources, was, entries, fresh = self._sources, self._was, self._entries, self._fresh
        # the leading messages equal to the last call's as they were then (in C, mostly by
        # identity: a kept message's fields are the same objects); shaping is a function of
        # a message's fields, so their shapes hold whatever objects they are
        try:
            k = common_prefix_length(messages, was)
        except Exception:  # a value that cannot be compared (an array...): shape again
            k = 0
        by_id = {id(e.source): e for e in entries[k:]}
        new = []
        for i in range(k, len(messages)):
            m, c = messages[i], cuts.get(i, ())
            e = by_id.get(id(m))
            if e is None or e.source is not m or e.cuts != c or not _equal(e.was, m):
                e = _Shaped(m, c, shape(m, c))
            new.append(e)
        del entries[k:]
        entries.extend(new)
        sources[k:] = messages[k:]
        was[k:] = map(_WAS, new)
        fresh[k:] = map(_FRESH, new)
        for i in self._cut_at | cuts.keys():  # a breakpoint came or went before k: again
            if i < k and entries[i].cuts != cuts.get(i, ()):
                entries[i] = e = _Shaped(messages[i], cuts.get(i, ()),
                                         shape(messages[i], cuts.get(i, ())))
                was[i], fresh[i] = e.was, e.fresh
        self._cut_at = set(cuts)
        return entries

    def _forget(self) -> None:
        self._sources, self._was, self._entries, self._fresh = [], [], [], []
        self._cut_at = set()

    def _anthropic(self, messages: list[Message], points: Sequence[Breakpoint],
                   error_ids: set[str]) -> Any:
        if len(error_ids) != self._errors:  # a new is_error id: shape everything again
            self._forget()
            self._errors = len(error_ids)
        try:
            lead = 0
            while lead < len(messages) and messages[lead]["role"] in INSTRUCTION_ROLES:
                lead += 1
            head: list[Breakpoint] = []
            cuts: dict[int, tuple[Any, ...]] = {}  # by index after the head
            for index, offset in anthropic_breakpoints(messages, points):
                if index < lead:
                    head.append((index, offset))
                else:
                    cuts[index - lead] = (*cuts.get(index - lead, ()), offset)
            system, _ = to_anthropic(messages[:lead], head)
            entries = self._kept(messages[lead:], cuts,
                                 partial(_to_anthropic_one, error_ids=error_ids))
        except Exception:  # the whole list's conversion raises what is wrong, as it says it
            self._forget()
            return _shaped(handed_out(messages), points, "anthropic", error_ids)
        # a message alone in its run of one role comes back as it is; a merged one is new
        fresh = {id(e.one): e.fresh for e in entries}
        return system, [fresh[id(m)]() if id(m) in fresh else copy_json(m)
                        for m in alternating([e.one for e in entries])]


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # a value that cannot be compared: not known to be the same
        return False


_FRESH = attrgetter("fresh")
_WAS = attrgetter("was")


def _to_openai_one(message: Any, cuts: tuple[Any, ...]) -> Any:
    return to_openai([message])[0]


class _NotAlone(Exception):
    """A message whose shape depends on the others (a Responses body's instructions)."""


def _to_responses_one(message: Any, cuts: tuple[Any, ...]) -> Any:
    """A message's Responses items (it maps to them alone, unless it is instructions)."""
    instructions, items = to_responses([message])
    if instructions is not None:
        raise _NotAlone
    return items


def _is_opaque(item: Any) -> bool:
    return isinstance(item, Mapping) and item.get("type") in OPAQUE_TYPES


def _starts_afresh(before: Any, item: Any) -> bool:
    """Whether the chat messages of Responses items before ``item`` are final once it
    comes: it is a message item (it starts a chat message of its own) and the item
    before it (``None``: none) is no opaque item still waiting for a message."""
    if not isinstance(item, Mapping) or item.get("type", "message" if "role" in item
                                                  else None) != "message":
        return False
    return before is None or (isinstance(before, Mapping) and before.get(
        "type", "message" if "role" in before else None) in ITEM_TYPES)


def _compactions(message: Any) -> list[Any]:
    """The ``compaction`` items a chat message keeps (see :func:`with_compactions`)."""
    kept = message.get(KEPT) if isinstance(message, Mapping) else None
    return [i for i in kept if isinstance(i, Mapping) and i.get("type") == "compaction"
            ] if isinstance(kept, list) else []


def _to_anthropic_one(message: Any, cuts: tuple[Any, ...], *, error_ids: set[str]
                      ) -> Any:
    """A conversation message alone in the Anthropic shape, with its breakpoint offsets
    (before the merge of one role's runs); an instruction message there is the whole
    list's error."""
    if message["role"] in INSTRUCTION_ROLES:
        raise ValueError("a system message after the conversation started")
    _, [out] = _shaped([message], [(0, o) for o in cuts], "anthropic", error_ids)
    return out


def _copier(message: Any) -> Callable[[Any], Any]:
    """The cheapest copy of a shaped message that shares none of its dicts and lists:
    ``dict.copy`` for a message of strings, a copy of the calls for an assistant
    message whose tool calls hold strings, :func:`copy_json` for anything else."""
    if type(message) is not dict:
        return copy_json
    nested = [k for k, v in message.items() if type(v) is dict or type(v) is list]
    if not nested:
        return dict.copy
    if nested == ["tool_calls"] and all(_flat_call(c) for c in message["tool_calls"]):
        return _copy_calls
    return copy_json


def _flat(value: Any) -> bool:
    return type(value) is dict and not any(type(v) is dict or type(v) is list
                                           for v in value.values())


def _flat_call(call: Any) -> bool:
    """An OpenAI tool call whose only container is a ``function`` dict of strings."""
    return (type(call) is dict and _flat(call.get("function"))
            and _flat({k: v for k, v in call.items() if k != "function"}))


def _copy_flat(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return list(map(dict.copy, items))


def _copy_calls(message: dict[str, Any]) -> dict[str, Any]:
    calls = []
    for call in message["tool_calls"]:  # a loop: cheaper than a comprehension for 1 or 2
        fresh = call.copy()
        fresh["function"] = call["function"].copy()
        calls.append(fresh)
    out = message.copy()
    out["tool_calls"] = calls
    return out


# -- helpers --------------------------------------------------------------------------------


def count_tokens(payload: Any, tokenizer: str = "o200k_base") -> int:
    """Tokens of a request payload's JSON text (messages in any shape): a plain,
    format-independent measure to compare what two requests send."""
    text = json.dumps(payload, ensure_ascii=False, sort_keys=True, default=str)
    return get_tokenizer(tokenizer).count(text)


def _check_format(format: Any) -> None:
    if format not in FORMATS:
        raise ValueError(f"unknown format {quote(format)}; use one of {', '.join(FORMATS)}")


def _probe(strategy: Any) -> None:
    trace = openai_chat.trace_from_messages([dict(m) for m in _PROBE], where="probe")
    try:
        render_with_breakpoints(**trace.prompt_arguments(len(trace.turns) + 1),
                                compression=strategy)
    except StrategyNotApplicable as exc:
        raise StrategyNotApplicable(f"strategy {strategy.name!r} does not apply to chat "
                                    f"transcripts: {exc}") from None


def _plain(message: Any) -> Any:
    """A message as a dict: SDK objects (pydantic) through ``model_dump``, and the
    content blocks of an Anthropic message too."""
    if hasattr(message, "model_dump") and not isinstance(message, Mapping):
        message = {"content": None, **message.model_dump(exclude_none=True)}
    if isinstance(message, Mapping) and isinstance(message.get("content"), list):
        content = message["content"]
        if any(hasattr(b, "model_dump") and not isinstance(b, Mapping) for b in content):
            message = {**message, "content": [
                b.model_dump(exclude_none=True) if hasattr(b, "model_dump")
                and not isinstance(b, Mapping) else b for b in content]}
    return message


def _plain_list(messages: Any) -> list[Any]:
    """The messages of a list (or any iterable, a generator's read once) as plain dicts;
    a request body, a lone message or a text is refused with what to pass instead."""
    if isinstance(messages, Mapping):
        if "messages" in messages and "system" in messages:  # an Anthropic Messages body
            hint = ("; an Anthropic Messages body is taken whole with format=\"anthropic\" "
                    "(its system, messages and tools)")
        elif "input" in messages and "messages" not in messages:  # a Responses request
            hint = ("; an OpenAI Responses request is taken whole with "
                    "format=\"responses\" (its instructions, input and tools)")
        else:
            hint = ("; pass its \"messages\" list (and its \"tools\" as tools=)"
                    if "messages" in messages else
                    "; pass a list of them, [message]" if "role" in messages else "")
        raise TraceError(f"{WHERE}: expected a list of message objects, got "
                         f"{type(messages).__name__}{hint}")
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Iterable):
        raise TraceError(f"{WHERE}: expected a list of message objects, got "
                         f"{type(messages).__name__}")
    return [_plain(m) for m in messages]


def _check_turns_left(turns_left: Any) -> None:
    """``turns_left`` is None (not known) or a count of turns, never below zero."""
    if turns_left is not None and (isinstance(turns_left, bool)
                                   or not isinstance(turns_left, int) or turns_left < 0):
        raise ValueError(f"turns_left must be a number of turns (an int >= 0) or None "
                         f"(not known), got {turns_left!r}")


def _has_assistant(messages: Sequence[Any]) -> bool:
    return any(isinstance(m, Mapping) and m.get("role") == "assistant" for m in messages)


def _tool_map(tools: Any) -> dict[str, Tool]:
    if tools is None:
        return {}
    if isinstance(tools, Mapping):
        return dict(tools)
    return tools_from(tools, "tools")


def _openai_entries(messages: Sequence[Any], start: int) -> list[Entry]:
    """Entries of OpenAI messages numbered from ``start`` (the reader's usage handling)."""
    out = []
    for k, m in enumerate(messages):
        try:
            [entry] = openai_chat.message_entries([m], WHERE)
        except TraceError as exc:
            raise _renumbered(exc, start + k) from None
        out.append(Entry(start + k, entry.message, entry.usage, entry.error))
    return out


#: a Compressor takes the system prompt as an argument, not as a message
_COMPRESSOR_SYSTEM = "pass the system prompt as Compressor(system=...)"


def _anthropic_entries(system: Any, messages: Sequence[Any], start: int = 0) -> list[Entry]:
    """Entries of Anthropic messages (as OpenAI chat ones) numbered from ``start``, read
    for a :class:`Compressor` (whose system prompt is its ``system`` argument)."""
    try:
        entries = anthropic_messages.message_entries(system, list(messages), WHERE,
                                                     system_hint=_COMPRESSOR_SYSTEM)
    except TraceError as exc:
        raise _renumbered(exc, start) if start else exc from None
    return [e if e.index < 0 else replace(e, index=e.index + start) for e in entries]


def _renumbered(exc: TraceError, index: int) -> TraceError:
    """A reader's error about message 0 of a one-message list, about message ``index``."""
    text = str(exc)
    head = f"{WHERE}: message 0: "
    return TraceError(f"{WHERE}: message {index}: {text[len(head):]}"
                      if text.startswith(head) else text)


def _preamble_trace(entries: Sequence[Entry]) -> None:
    """Check messages before the first assistant message with the reader's own checks
    (a tool message there has no call; a bad role or content is named)."""
    sentinel = Entry(-2, {"role": "assistant", "content": ""})
    build_trace([*entries, sentinel], where=WHERE, source="")


def _preamble_only(entries: list[Entry], format: str, error_ids: Iterable[str] = ()) -> Any:
    """``compress`` of a list with no assistant message yet: there is no turn to
    compress, so the messages are sent as they are (checked by the reader; Anthropic:
    marked at the end of the system prompt and of the last message)."""
    if not entries:
        return {"openai": [], "responses": (None, [])}.get(format, ("", []))
    _preamble_trace(entries)
    messages: list[Message] = [dict(e.message) for e in entries]  # type: ignore[misc]
    return _shaped(messages, [(0, None), (len(messages) - 1, None)], format, set(error_ids))


def _shaped(messages: list[Message], points: Sequence[Any], format: str,
            error_ids: set[str]) -> Any:
    if format == "openai":
        return to_openai(messages)
    if format == "responses":
        return to_responses(messages)
    system, out = to_anthropic(messages, points)
    if error_ids:
        for message in out:
            for block in message["content"] if isinstance(message["content"], list) else ():
                if block.get("type") == "tool_result" and block.get("tool_use_id") in error_ids:
                    block["is_error"] = True
    return system, out


def _anthropic_input(data: Any, tools: Any) -> tuple[Any, list[Any], Any]:
    """``(system, messages, tools)`` of an Anthropic request body or pair."""
    if isinstance(data, Mapping):
        if "messages" not in data:
            raise TraceError(f"{WHERE}: an Anthropic input needs \"messages\": pass "
                             f"{{\"system\": ..., \"messages\": [...]}} or (system, messages)")
        return data.get("system"), _plain_list(data["messages"]), (
            tools if tools is not None else data.get("tools"))
    if isinstance(data, tuple) and len(data) == 2:
        return data[0], _plain_list(data[1]), tools
    raise TraceError(f"{WHERE}: with format=\"anthropic\" pass {{\"system\": ..., "
                     f"\"messages\": [...]}} or a (system, messages) pair, got "
                     f"{type(data).__name__}")


def _error_ids(messages: Iterable[Any]) -> set[str]:
    """The ``tool_use_id`` of every Anthropic tool result flagged ``is_error``."""
    ids = set()
    for m in messages:
        content = m.get("content") if isinstance(m, Mapping) else None
        for block in content if isinstance(content, list) else ():
            if (isinstance(block, Mapping) and block.get("type") == "tool_result"
                    and block.get("is_error")):
                ids.add(str(block.get("tool_use_id")))
    return ids
