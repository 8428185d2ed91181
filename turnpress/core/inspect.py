"""Human-readable views of a trace for debugging (spec 03: debug ``view`` / ``raw``).

``view="full"`` shows every turn as it ran (program, tool calls, output, result
or error); ``view="compressed"`` shows, for each turn, the prompt the LLM was
given under a strategy, then its reply. ``raw=True`` shows the raw LLM response
instead of the extracted program (and, in the compressed view, the system prompt).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from turnpress.core.clojure import to_clojure
from turnpress.core.compression import ARG_LIMIT, ARG_PRINTABLE_LIMIT, error_message
from turnpress.core.message_text import json_argument, message_body
from turnpress.core.model import INSTRUCTION_ROLES, Turn
from turnpress.core.providers import format_text
from turnpress.core.trace import Trace

__all__ = ["VIEWS", "describe_trace", "describe_turn"]

VIEWS = ("full", "compressed")


def _sample(value: Any) -> str:
    return to_clojure(value, 5, 200)[0]


#: how much of a transcript's tool result ``trace show`` prints
RESULT_CHARS = 200


def _describe_transcript_turn(turn: Turn, lines: list[str]) -> str:
    """A transcript turn in the transcript's own terms: the assistant's text, tool calls
    with their JSON arguments and results, then the user (system, developer) messages
    that followed, each under its role."""
    if turn.program:
        lines.extend(["assistant:", turn.program])
    if turn.tool_calls:
        lines.append("tool calls:")
        for call in turn.tool_calls:
            args = ", ".join(json_argument(a, ARG_PRINTABLE_LIMIT) for a in call.args)
            result = "(no result)" if call.result is None else json.dumps(
                json_argument(call.result, RESULT_CHARS) if isinstance(call.result, str)
                else message_body({"content": call.result})[:RESULT_CHARS],
                ensure_ascii=False)
            lines.append(f"  {call.name}({args}) -> {result}")
    for message in turn.messages[1:]:
        role = message.get("role")
        if role in ("user", *INSTRUCTION_ROLES):
            lines.append(f"{role}:")
            lines.append(message_body(message))
    if not turn.success:
        lines.append(f"error: {error_message(turn)}")
    return "\n".join(lines)


def describe_turn(turn: Turn, *, raw: bool = False) -> str:
    """One turn as it ran: status, code, tool calls, output, result or error, memory.
    A transcript's turn (one with ``messages``) is told in the transcript's terms:
    ``assistant:`` text, tool calls with JSON arguments, ``user:`` messages."""
    status = "ok" if turn.success else f"FAILED ({turn.result.reason})"
    lines = [f"--- turn {turn.number}: {status} ---"]
    if turn.messages and not raw:
        return _describe_transcript_turn(turn, lines)
    lines.append("raw response:" if raw else "program:")
    lines.append(turn.raw_response if raw else turn.program)
    if turn.tool_calls:
        lines.append("tool calls:")
        for call in turn.tool_calls:
            args = " ".join(to_clojure(a, ARG_LIMIT, ARG_PRINTABLE_LIMIT)[0] for a in call.args)
            lines.append(f"  {call.name}({args}) -> {_sample(call.result)}")
    if turn.prints:
        lines.append("output:")
        lines.extend(turn.prints)
    if turn.success:
        if not (turn.messages and turn.result is None):  # a transcript turn returns nothing
            lines.append(f"result: {_sample(turn.result)}")
    else:
        lines.append(f"error: {error_message(turn)}")
    if turn.memory:
        lines.append("memory: " + ", ".join(turn.memory))
    return "\n".join(lines)


def _skipped_line(skipped: Any) -> str:
    """``skipped message 9 (exit): final submission ...`` for one ``Trace.skipped`` entry;
    ``note: ...`` for a reader's note on what it left out (``{"note": text}``)."""
    if "note" in skipped and "message" not in skipped:
        return f"note: {skipped['note']}"
    message = skipped.get("message")
    role = message.get("role", "?") if isinstance(message, dict) else "?"
    return (f"skipped message {skipped.get('index', '?')} ({role}): "
            f"{skipped.get('reason', 'no reason given')}")


def describe_trace(trace: Trace, *, view: str = "full", raw: bool = False,
                   compression: Any = True,
                   template_dirs: Iterable[str | os.PathLike[str]] = ()) -> str:
    """The whole trace as text, in the ``full`` or ``compressed`` view."""
    if view not in VIEWS:
        raise ValueError(f"view must be one of {', '.join(VIEWS)}, got {view!r}")
    status = ("succeeded" if trace.turns and trace.turns[-1].success else "did not succeed")
    head = [f"trace {trace.name or '(unnamed)'}: {len(trace.turns)} of {trace.max_turns} turns, "
            f"{status}", f"mission: {trace.mission}"]
    if trace.source:
        head.insert(1, f"imported from: {trace.source}")
    head.extend(_skipped_line(s) for s in trace.skipped)
    if view == "full":
        if raw and trace.system_prompt:
            head.append(f"system prompt:\n{trace.system_prompt}")
        blocks = ["\n".join(head)] + [describe_turn(t, raw=raw) for t in trace.turns]
        return "\n\n".join(blocks) + "\n"
    blocks = ["\n".join(head)]
    for turn in trace.turns:
        messages = trace.prompt(turn.number, compression, template_dirs)
        if not raw:
            messages = [m if m["role"] != "system" else {**m, "content": "(system prompt; "
                        "--raw shows it)"} for m in messages]
        reply = turn.raw_response if raw else turn.program
        blocks.append(f"--- turn {turn.number}: prompt ---\n{format_text(messages).rstrip()}"
                      f"\n--- turn {turn.number}: reply ---\n{reply}")
    return "\n\n".join(blocks) + "\n"
