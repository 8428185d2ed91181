"""The request document of one turn of a run, as ``turnpress render -f FORMAT`` prints it.

:func:`request_for` is the whole of it, from a :class:`~turnpress.core.trace.Trace`:
the strategy's messages for turn ``n`` in a provider's shape, with the tools the
transcript's request defined. :func:`request_document` is the same from messages
already rendered (the CLI renders once, for its left-out-key warnings too).

- ``anthropic``: ``{"system", "messages"[, "tools"]}``, with the strategy's cache
  breakpoints as ``cache_control`` markers (:func:`~turnpress.core.providers.to_anthropic`);
- ``responses``: ``{["instructions",] "input"[, "tools"]}``, every ``compaction`` item
  of the run's earlier messages the view dropped put back first
  (:func:`~turnpress.core.responses.with_compactions`);
- ``openai``: ``{"messages"[, "tools"]}`` (chat completions);
- ``json``: ``{"trace", "turn", "strategy", "options", "messages"}``, turnpress's own
  messages, every key kept.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from turnpress.core.model import Message
from turnpress.core.providers import (
    prompt_with_breakpoints,
    request_tools,
    to_anthropic,
    to_openai,
)
from turnpress.core.responses import to_responses, with_compactions
from turnpress.core.strategy_lookup import get_strategy
from turnpress.core.trace import Trace

__all__ = ["REQUEST_FORMATS", "RequestError", "request_document", "request_for"]

#: the formats of :func:`request_for` (``render -f``'s, but ``text``)
REQUEST_FORMATS = ("anthropic", "responses", "openai", "json")


class RequestError(ValueError):
    """A turn of a run that has no request document in a format: names the trace, the
    turn and the format (``problem`` is what is wrong, without them)."""

    def __init__(self, trace: str, turn: Any, format: str, problem: str) -> None:
        super().__init__(f"trace {trace}, turn {turn}, format {format}: {problem}")
        self.trace, self.turn, self.format, self.problem = trace, turn, format, problem


def _tools_of(trace: Trace, shape: str) -> dict[str, Any]:
    """``{"tools": [...]}``: the tools a transcript's request defined, in ``shape``
    (nothing when it defined none)."""
    tools = request_tools(trace.tools, shape)
    return {"tools": tools} if tools else {}


def request_document(trace: Trace, n: int, strategy: Any, messages: Sequence[Message],
                     format: str,
                     template_dirs: Iterable[str | os.PathLike[str]] = ()) -> dict[str, Any]:
    """The request document of turn ``n`` of ``trace`` whose prompt, rendered by the
    strategy instance ``strategy``, is ``messages`` (``trace.prompt(n, strategy,
    template_dirs)``). ``anthropic`` renders the prompt again for the strategy's cache
    breakpoints. A format with no place for a message's part raises
    :class:`RequestError`."""
    if format == "json":
        return {"trace": trace.name, "turn": n, "strategy": strategy.name,
                "options": getattr(strategy, "options", {}), "messages": messages}
    if format == "anthropic":
        _, breakpoints = prompt_with_breakpoints(trace, n, strategy, template_dirs)
        try:  # a part with no Anthropic block (input_audio...) is the trace's
            system, anthropic_messages = to_anthropic(messages, breakpoints)
        except ValueError as exc:
            raise RequestError(trace.name, n, format, str(exc)) from None
        return {"system": system, "messages": anthropic_messages,
                **_tools_of(trace, "anthropic")}
    if format == "responses":
        instructions, items = to_responses(messages)
        items = with_compactions([*trace.preamble, *(m for past in trace.turns[: n - 1]
                                                    for m in past.messages)], items)
        return {**({} if instructions is None else {"instructions": instructions}),
                "input": items, **_tools_of(trace, "responses")}
    if format == "openai":
        return {"messages": to_openai(messages), **_tools_of(trace, "openai")}
    raise RequestError(trace.name, n, repr(format),
                       f"no such format; one of {', '.join(REQUEST_FORMATS)}")


def request_for(trace: Trace, turn: int | None = None, *, strategy: Any = True,
                format: str = "anthropic",
                template_dirs: Iterable[str | os.PathLike[str]] = ()) -> dict[str, Any]:
    """The request of turn ``turn`` of ``trace`` in ``format`` (``anthropic``,
    ``responses``, ``openai`` or ``json``): the document ``turnpress render TRACE -s
    STRATEGY -t TURN -f FORMAT`` prints, as a dict (``json.dumps(doc, indent=2,
    ensure_ascii=False)`` is its text).

    ``turn`` goes from 1 to the number of turns + 1 (the next prompt; default: the last
    turn); ``strategy`` takes what ``render(compression=...)`` takes, or a strategy
    instance; ``template_dirs`` are searched first for templates. A bad turn or format
    raises :class:`RequestError` (a ``ValueError``) naming the trace, the turn and the
    format; a bad strategy, the ``ValueError`` of
    :func:`~turnpress.core.strategy_lookup.get_strategy`.
    """
    n = max(len(trace.turns), 1) if turn is None else turn
    if format not in REQUEST_FORMATS:
        raise RequestError(trace.name, n, repr(format),
                           f"no such format; one of {', '.join(REQUEST_FORMATS)}")
    try:
        trace.prompt_arguments(n)
    except ValueError as exc:
        raise RequestError(trace.name, n, format, str(exc)) from None
    chosen = get_strategy(strategy)
    messages = trace.prompt(n, chosen, template_dirs)
    return request_document(trace, n, chosen, messages, format, template_dirs)
